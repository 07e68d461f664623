// The one controller mechanism, for the cleanup controller and every sandbox stand-in alike
// (the shape of controller-runtime's manager and internal controller, in a few hundred lines):
// - shared caches: one list+watch per kind, namespace scope and selector, whoever asks for it;
// - controllers declared as watch(cache, mapToKeys) + reconcile(key), each behind its own queue;
// - one lifecycle: start() starts every informer, waits until all have synced, then starts the
//   queues, so nothing is decided on a half-filled cache (a Machine seen before its Cluster
//   would look orphaned); halt() stops every queue at once, stop() stops queues then informers.
// Events that arrive before the caches synced (the initial lists) are queued, not dropped:
// each object is reconciled once the workers start, as controller-runtime does.
import { formatKey, keyOf, parseKey, type ObjectKey } from '../api/object-key.js';
import type { Logger } from '../log/logger.js';
import type { KubeClient } from './client.js';
import { Informer, type InformerEvent } from './informer.js';
import { qualifiedName, type KubeObject, type ResourceType } from './resources.js';
import { WorkQueue, type ReconcileResult, type WorkQueueMetrics } from './work-queue.js';

export interface CacheSpec {
  type: ResourceType;
  /** One informer per namespace; none or [] means all namespaces. */
  namespaces?: readonly string[];
  labelSelector?: string;
  fieldSelector?: string;
  /** Shrinks each object before it is cached, undefined drops it (the first spec of a shared cache sets it). */
  transform?: (obj: KubeObject) => KubeObject | undefined;
}

/** A read-only view of one kind, filled by one informer per namespace scope. */
export class Cache<T extends KubeObject> {
  constructor(
    readonly type: ResourceType,
    private readonly scopes: ReadonlyArray<{ namespace: string | undefined; informer: Informer<T> }>,
  ) {}

  get(key: ObjectKey): T | undefined {
    const text = formatKey(key);
    for (const { namespace, informer } of this.scopes) {
      if (namespace !== undefined && namespace !== key.namespace) continue;
      const found = informer.get(text);
      if (found) return found;
    }
    return undefined;
  }

  list(filter?: (o: T) => boolean): T[] {
    return this.scopes.flatMap(({ informer }) => informer.list(filter));
  }

  get size(): number {
    return this.scopes.reduce((n, { informer }) => n + informer.size, 0);
  }

  /** Adds an index to every scope's informer (Informer.addIndex); before the manager starts. */
  addIndex(name: string, values: (o: T) => readonly string[]): this {
    for (const { informer } of this.scopes) informer.addIndex(name, values);
    return this;
  }

  /** The cached objects whose index `name` has `value`, without looking at the others. */
  byIndex(name: string, value: string): T[] {
    return this.scopes.flatMap(({ informer }) => informer.byIndex(name, value));
  }

  /** Every change, as the cache sees it (Controller.watch is the usual way in). */
  on(handler: (e: InformerEvent<T>) => void): void {
    for (const { informer } of this.scopes) informer.on(handler);
  }

  async start(): Promise<void> {
    await Promise.all(this.scopes.map(({ informer }) => informer.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.scopes.map(({ informer }) => informer.stop()));
  }
}

/** Which keys an event concerns: the object's own by default, its owner's, or several. */
export type MapToKeys<T> = (e: InformerEvent<T>) => ObjectKey | readonly ObjectKey[] | undefined;

export interface QueueOptions {
  /** Keys reconciled at once. */
  concurrency?: number;
  /** First retry after a failure; doubled each time up to maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export interface ControllerOptions extends QueueOptions {
  reconcile: (key: ObjectKey) => Promise<ReconcileResult>;
  /** Default: the manager's, with `controller: <name>`. */
  logger?: Logger;
}

/** One reconcile function behind its own queue, fed by the caches it watches. */
export class Controller {
  private readonly queue: WorkQueue;
  private processedCount = 0;

  constructor(
    readonly name: string,
    options: ControllerOptions & {
      logger: Logger;
      metrics?: WorkQueueMetrics | undefined;
      onError?: (() => void) | undefined;
    },
  ) {
    const { reconcile } = options;
    this.queue = new WorkQueue(
      async (text) => {
        try {
          return await reconcile(parseKey(text));
        } finally {
          this.processedCount++;
        }
      },
      {
        paused: true,
        logger: options.logger,
        ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
        ...(options.baseDelayMs !== undefined ? { baseDelayMs: options.baseDelayMs } : {}),
        ...(options.maxDelayMs !== undefined ? { maxDelayMs: options.maxDelayMs } : {}),
        ...(options.metrics ? { metrics: options.metrics } : {}),
        ...(options.onError ? { onError: options.onError } : {}),
      },
    );
  }

  /** Enqueues the keys `map` gives for each event of `cache` (default: the object's own key). */
  watch<T extends KubeObject>(cache: Cache<T>, map: MapToKeys<T> = (e) => keyOf(e.object)): this {
    cache.on((e) => {
      const keys = map(e);
      if (keys === undefined) return;
      for (const key of isKeyList(keys) ? keys : [keys]) this.enqueue(key);
    });
    return this;
  }

  enqueue(key: ObjectKey | undefined): void {
    if (key) this.queue.add(formatKey(key));
  }

  /** Reconciles finished so far: tells a quiet system from a busy one (Manager.settled). */
  get processed(): number {
    return this.processedCount;
  }

  /** Keys waiting. */
  get length(): number {
    return this.queue.length;
  }

  get stopped(): boolean {
    return this.queue.stopped;
  }

  /** @internal the manager's lifecycle */
  run(): void {
    this.queue.start();
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** @internal the manager's lifecycle */
  stop(): Promise<void> {
    return this.queue.stop();
  }
}

const isKeyList = (keys: ObjectKey | readonly ObjectKey[]): keys is readonly ObjectKey[] =>
  Array.isArray(keys);

export interface ManagerOptions {
  client: KubeClient;
  logger: Logger;
  /** A silent watch is ended and resumed after this long (Informer's default when unset). */
  informerIdleTimeoutMs?: number;
  /** Every controller's queue options unless it sets its own. */
  queueDefaults?: QueueOptions;
  /** Per controller: its queue's metrics and a hook for each failed reconcile. */
  metricsFor?: (controller: string) => WorkQueueMetrics;
  onReconcileError?: (controller: string) => void;
}

export class Manager {
  private readonly caches = new Map<string, Cache<KubeObject>>();
  private readonly all: Controller[] = [];
  private state: 'new' | 'starting' | 'synced' | 'stopped' = 'new';

  constructor(private readonly options: ManagerOptions) {}

  /** The shared cache of this kind, scope and selector: made on the first ask, then shared. */
  cache<T extends KubeObject>(spec: CacheSpec): Cache<T> {
    const namespaces = [...new Set(spec.namespaces ?? [])].sort();
    const id = [
      qualifiedName(spec.type),
      namespaces.join(','),
      spec.labelSelector ?? '',
      spec.fieldSelector ?? '',
    ].join('|');
    let cache = this.caches.get(id);
    if (!cache) {
      if (this.state !== 'new') throw new Error(`cache ${id} asked for after the manager started`);
      const logger = this.options.logger.child({ informer: qualifiedName(spec.type) });
      const scopes = (namespaces.length === 0 ? [undefined] : namespaces).map((namespace) => ({
        namespace,
        informer: new Informer<KubeObject>(this.options.client, spec.type, {
          ...(namespace !== undefined ? { namespace } : {}),
          ...(spec.labelSelector ? { labelSelector: spec.labelSelector } : {}),
          ...(spec.fieldSelector ? { fieldSelector: spec.fieldSelector } : {}),
          ...(spec.transform ? { transform: spec.transform } : {}),
          ...(this.options.informerIdleTimeoutMs !== undefined
            ? { idleTimeoutMs: this.options.informerIdleTimeoutMs }
            : {}),
          logger,
        }),
      }));
      cache = new Cache<KubeObject>(spec.type, scopes);
      this.caches.set(id, cache);
    }
    return cache as unknown as Cache<T>;
  }

  /** Declares a controller; its queue runs once the caches have synced. */
  controller(name: string, options: ControllerOptions): Controller {
    if (this.all.some((c) => c.name === name)) throw new Error(`controller ${name} declared twice`);
    const { metricsFor, onReconcileError, queueDefaults } = this.options;
    const controller = new Controller(name, {
      ...queueDefaults,
      ...options,
      logger: options.logger ?? this.options.logger.child({ controller: name }),
      metrics: metricsFor?.(name),
      onError: onReconcileError && (() => onReconcileError(name)),
    });
    this.all.push(controller);
    return controller;
  }

  get controllers(): readonly Controller[] {
    return this.all;
  }

  /** Every cache has its first list and the queues run (the readiness probe). */
  get synced(): boolean {
    return this.state === 'synced';
  }

  get stopped(): boolean {
    return this.state === 'stopped';
  }

  /**
   * Starts every informer, waits for all of them, then starts the queues. Rejects when a
   * cache cannot sync (a list the credentials may not read); stop() then releases the rest.
   */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`the manager was started already (${this.state})`);
    this.state = 'starting';
    // All at once: one cache after the other, each page waits for the apiserver and then the
    // apiserver for us, and at scale the sync took much longer. The pages held meanwhile
    // are small; the peak was garbage V8 had not collected, which the image's old-generation
    // limit bounds.
    await Promise.all([...this.caches.values()].map((c) => c.start()));
    if (this.state !== 'starting') return; // stopped while syncing
    this.state = 'synced';
    for (const c of this.all) c.run();
  }

  /**
   * Stops acting at once (leadership lost): no queued or retried work of any controller
   * starts any more. What is in flight is left to finish or to the process exit.
   */
  halt(): void {
    this.state = 'stopped';
    for (const c of this.all) void c.stop();
  }

  /** Resolves when no controller has work queued or running (timers aside). */
  async idle(): Promise<void> {
    await Promise.all(this.all.map((c) => c.idle()));
  }

  /**
   * Resolves once every queue has drained and stayed drained for `quietMs`: work begets work
   * through watch events, which take a moment to arrive (tests).
   */
  async settled(quietMs: number): Promise<void> {
    for (;;) {
      const before = this.processed();
      await this.idle();
      await new Promise((r) => setTimeout(r, quietMs));
      if (this.processed() === before && this.all.every((c) => c.length === 0)) return;
    }
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    await Promise.all(this.all.map((c) => c.stop()));
    await Promise.all([...this.caches.values()].map((c) => c.stop()));
  }

  private processed(): number {
    return this.all.reduce((n, c) => n + c.processed, 0);
  }
}
