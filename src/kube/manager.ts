// The one controller mechanism, for the cleanup controller and every sandbox stand-in alike
// (the shape of controller-runtime's manager and internal controller, in a few hundred lines):
// - shared caches: one list+watch per kind, namespace scope and selector, whoever asks for it;
// - controllers declared as watch(cache, mapToKeys) + reconcile(key), each behind its own queue;
// - one lifecycle: start() starts every informer, waits until all have synced, then starts the
//   queues, so nothing is decided on a half-filled cache (a Machine seen before its Cluster
//   would look orphaned); halt() stops every queue at once, stop() stops queues then informers;
// - enqueue sources: keys pushed by code (one controller's finding that wakes another, a watch
//   outside the caches), watched like a cache;
// - runnables (servers, writers, pools) started and stopped with it, and, with leader election,
//   run(): the caches, queues and leader-only runnables only while this replica leads.
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

/**
 * Keys pushed by code rather than by a cache (Manager.source): what one controller found that
 * another must look at, or changes seen outside the caches. Controllers watch it as they watch
 * a cache; each emit reaches every watcher.
 */
export class EnqueueSource<T = ObjectKey> {
  private readonly handlers: Array<(item: T) => void> = [];

  constructor(readonly name: string) {}

  emit(item: T): void {
    for (const handler of this.handlers) handler(item);
  }

  /** Every item emitted (Controller.watch is the usual way in). */
  on(handler: (item: T) => void): void {
    this.handlers.push(handler);
  }
}

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

  /**
   * Enqueues the keys `map` gives for each event of `cache` (default: the object's own key), or
   * for each item of an enqueue source (default: the item, a key).
   */
  watch<T extends KubeObject>(cache: Cache<T>, map?: MapToKeys<T>): this;
  watch(source: EnqueueSource): this;
  watch<T>(source: EnqueueSource<T>, map: (item: T) => ObjectKey | readonly ObjectKey[] | undefined): this;
  watch(from: object, map?: (e: never) => ObjectKey | readonly ObjectKey[] | undefined): this {
    const keysOf = (map ??
      (from instanceof Cache
        ? (e: InformerEvent<KubeObject>) => keyOf(e.object)
        : (item: ObjectKey) => item)) as (e: unknown) => ObjectKey | readonly ObjectKey[] | undefined;
    (from as { on(handler: (e: unknown) => void): void }).on((e) => {
      const keys = keysOf(e);
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

/** Something the manager starts and stops besides its controllers: a server, a writer, a pool. */
export interface Runnable {
  readonly name: string;
  /**
   * Runs only while this replica leads, started once the caches synced and the queues run
   * (start()); otherwise it runs from run() on, leader or not (a probe server).
   */
  readonly leaderOnly?: boolean;
  start?(): void | Promise<void>;
  /** Leadership lost (halt()): stop acting at once, without waiting on anything. */
  halt?(): void;
  /** stop() begins, before the queues stop: take no new work in. */
  stopping?(): void;
  /** After the queues and caches stopped (leader-only ones only if leadership was taken). */
  stop?(): void | Promise<void>;
}

/** A campaign for leadership (client-go's leaderelection on a Lease, for one). */
export interface LeaderElection {
  start(): void;
  /** Stops campaigning and gives leadership up. */
  stop(): Promise<void>;
}

/** The manager's side of a campaign: what to call when leadership is won and when it is lost. */
export interface LeadershipCallbacks {
  started: () => void;
  stopped: () => void;
}

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
  /** run() campaigns first and starts only once leading; none: run() leads at once. */
  leaderElection?: (callbacks: LeadershipCallbacks) => LeaderElection;
  /** Leadership won or lost (the leader metrics). */
  onLeadershipChange?: (leading: boolean) => void;
  /** After leadership was lost and everything halted (not during stop()): the process exits. */
  onLeadershipLost?: () => void;
  /** The caches could not sync after run() took leadership (a list its RBAC denies). */
  onStartFailed?: (err: unknown) => void;
}

export class Manager {
  private readonly caches = new Map<string, Cache<KubeObject>>();
  private readonly all: Controller[] = [];
  private readonly sources = new Map<string, EnqueueSource<unknown>>();
  private readonly runnables: Runnable[] = [];
  private state: 'new' | 'starting' | 'synced' | 'stopped' = 'new';
  private election: LeaderElection | undefined;
  private leadingNow = false;
  private led = false;
  private stopping: Promise<void> | undefined;

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

  /** The enqueue source of this name: made on the first ask, then shared. */
  source<T = ObjectKey>(name: string): EnqueueSource<T> {
    let source = this.sources.get(name);
    if (!source) {
      source = new EnqueueSource<unknown>(name);
      this.sources.set(name, source);
    }
    return source as EnqueueSource<T>;
  }

  /** Adds a runnable, started and stopped in the order added. */
  add<R extends Runnable>(runnable: R): R {
    if (this.state !== 'new') throw new Error(`runnable ${runnable.name} added after the manager started`);
    this.runnables.push(runnable);
    return runnable;
  }

  /** Leads now (without leader election, or once elected). */
  get leading(): boolean {
    return this.leadingNow;
  }

  /** The readiness probe: a standby is ready; a leader once every cache synced and the queues run. */
  get ready(): boolean {
    return this.leadingNow ? this.synced : true;
  }

  /**
   * The process's lifecycle: starts the runnables that run leader or not, then campaigns (with
   * leader election) or leads at once. Leading starts the caches, queues and leader-only
   * runnables (start()); losing leadership halts them all at once (halt()).
   */
  async run(): Promise<void> {
    for (const r of this.runnables) if (!r.leaderOnly) await r.start?.();
    const { leaderElection } = this.options;
    if (!leaderElection) return this.lead();
    this.election = leaderElection({ started: () => this.lead(), stopped: () => this.leadershipLost() });
    this.election.start();
  }

  private lead(): void {
    this.leadingNow = true;
    this.options.onLeadershipChange?.(true);
    this.start().catch((err: unknown) => {
      if (this.options.onStartFailed) this.options.onStartFailed(err);
      else this.options.logger.error('the manager failed to start', { error: String(err) });
    });
  }

  private leadershipLost(): void {
    this.leadingNow = false;
    this.options.onLeadershipChange?.(false);
    if (this.stopping) return;
    this.halt();
    this.options.onLeadershipLost?.();
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
    this.led = true;
    // All at once: one cache after the other, each page waits for the apiserver and then the
    // apiserver for us, and at scale the sync took much longer. The pages held meanwhile
    // are small; the peak was garbage V8 had not collected, which the image's old-generation
    // limit bounds.
    await Promise.all([...this.caches.values()].map((c) => c.start()));
    if (this.state !== 'starting') return; // stopped while syncing
    this.state = 'synced';
    for (const c of this.all) c.run();
    for (const r of this.runnables) if (r.leaderOnly) await r.start?.();
  }

  /**
   * Stops acting at once (leadership lost): no queued or retried work of any controller
   * starts any more. What is in flight is left to finish or to the process exit.
   */
  halt(): void {
    this.state = 'stopped';
    for (const c of this.all) void c.stop();
    for (const r of this.runnables) if (r.leaderOnly && this.led) r.halt?.();
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

  /**
   * Stops the queues, then the informers, then the leader-only runnables, gives leadership up,
   * then stops the other runnables. Once: a second call waits for the first.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    this.state = 'stopped';
    const leaderOnly = this.runnables.filter((r) => r.leaderOnly && this.led);
    for (const r of leaderOnly) r.stopping?.();
    await Promise.all(this.all.map((c) => c.stop()));
    await Promise.all([...this.caches.values()].map((c) => c.stop()));
    for (const r of leaderOnly) await r.stop?.();
    await this.election?.stop();
    for (const r of this.runnables) if (!r.leaderOnly) await r.stop?.();
  }

  private processed(): number {
    return this.all.reduce((n, c) => n + c.processed, 0);
  }
}
