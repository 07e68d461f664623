// What every stand-in controller is made of: shared informers (one list+watch per kind,
// resumed after drops and apiserver restarts) feeding one WorkQueue per controller,
// keyed by namespace/name, so repeated events for one object merge into one reconcile.
import type { KubeClient } from '../../src/kube/client.js';
import { Informer, objectKey, type InformerEvent } from '../../src/kube/informer.js';
import { qualifiedName, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { WorkQueue, type ReconcileResult } from '../../src/kube/work-queue.js';
import type { Logger } from '../../src/log/logger.js';

export class SharedInformers {
  private readonly byType = new Map<string, Informer<KubeObject>>();

  constructor(
    private readonly client: KubeClient,
    private readonly logger: Logger,
  ) {}

  get<T extends KubeObject>(type: ResourceType, labelSelector?: string): Informer<T> {
    const id = `${qualifiedName(type)}?${labelSelector ?? ''}`;
    let informer = this.byType.get(id);
    if (!informer) {
      informer = new Informer<KubeObject>(this.client, type, {
        ...(labelSelector ? { labelSelector } : {}),
        // A silent stream may be half-open (apiserver gone without a FIN): resume it.
        idleTimeoutMs: 60_000,
        logger: this.logger.child({ informer: qualifiedName(type) }),
      });
      this.byType.set(id, informer);
    }
    return informer as unknown as Informer<T>;
  }

  async start(): Promise<void> {
    await Promise.all([...this.byType.values()].map((i) => i.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.byType.values()].map((i) => i.stop()));
  }
}

/** One controller: a reconcile function behind its own queue. */
export class Reconciler {
  readonly queue: WorkQueue;
  /** Reconciles finished so far: lets idle() tell a quiet system from a busy one. */
  processed = 0;

  constructor(
    readonly name: string,
    reconcile: (key: string) => Promise<ReconcileResult>,
    readonly logger: Logger,
  ) {
    this.queue = new WorkQueue(
      async (key) => {
        try {
          return await reconcile(key);
        } finally {
          this.processed++;
        }
      },
      { logger, baseDelayMs: 100, maxDelayMs: 5_000, concurrency: 4 },
    );
  }

  enqueue(key: string | undefined): void {
    if (key) this.queue.add(key);
  }

  /** Enqueues what `keys` maps each event of `informer` to (default: the object's own key). */
  watch<T extends KubeObject>(
    informer: Informer<T>,
    keys: (e: InformerEvent<T>) => Array<string | undefined> | string | undefined = (e) =>
      objectKey(e.object),
  ): this {
    informer.on((e) => {
      const mapped = keys(e);
      for (const key of Array.isArray(mapped) ? mapped : [mapped]) this.enqueue(key);
    });
    return this;
  }
}

export const keyOf = (namespace: string | undefined, name: string | undefined): string =>
  namespace ? `${namespace}/${name ?? ''}` : (name ?? '');

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: '', name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The key of the object's controller owner of the given kind, if any. */
export function controllerOwnerKey(obj: KubeObject, kind: string): string | undefined {
  const owner = obj.metadata.ownerReferences?.find((o) => o.controller && o.kind === kind);
  return owner ? keyOf(obj.metadata.namespace, owner.name) : undefined;
}

/** Deep equality of JSON values, blind to key order (the apiserver reorders keys). */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

export const nowIso = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
