// A list-and-watch cache of one kind, like client-go's informer: the initial list,
// then a watch from its resourceVersion, resumed when it ends, relisted after 410 or an
// error, so handlers see every change exactly as the cache does. Re-opening is paced by
// watch-backoff.ts: errors and watches that end at once without events back off.
import { formatKey, keyOf } from '../api/object-key.js';
import type { KubeClient } from './client.js';
import { isKubeError, isRetryable } from './errors.js';
import type { KubeObject, ResourceType } from './resources.js';
import { WatchBackoff, pause, type WatchBackoffPolicy } from './watch-backoff.js';
import type { Logger } from '../log/logger.js';

export interface InformerEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: T;
  old?: T;
}

export interface InformerOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** A silent watch is ended and resumed after this long. */
  idleTimeoutMs?: number;
  logger?: Logger;
  /**
   * Applied to every object before it is cached and handed to handlers (client-go's
   * SetTransform): keep only the fields used, so a large cache stays small.
   */
  transform?: (obj: KubeObject) => KubeObject;
  /** Objects per list request (default 500). */
  pageSize?: number;
  /** Pacing of relists and re-opened watches (see watch-backoff.ts); the defaults suit production. */
  backoff?: Partial<WatchBackoffPolicy>;
  /**
   * Told of each failed list or watch and the pause before the next try, and of each list that
   * succeeded: how a caller reports a server it cannot reach (the cache keeps what it had).
   */
  onFailure?: (error: Error, pauseMs: number) => void;
  onListed?: () => void;
}

interface WatchRound {
  resourceVersion: string | undefined;
  ranMs: number;
  /** Events delivered, bookmarks included. */
  events: number;
  error?: Error;
}

/** The cache's own index: "namespace/name" (a Map needs a string). */
const cacheKey = (o: KubeObject): string => formatKey(keyOf(o));

export class Informer<T extends KubeObject> {
  private readonly cache = new Map<string, T>();
  private readonly handlers: Array<(e: InformerEvent<T>) => void> = [];
  private stopped = false;
  private readonly stopping = new AbortController();
  private currentWatch: { stop: () => void } | undefined;
  private synced: Promise<void>;
  private markSynced!: () => void;
  private failSync!: (err: Error) => void;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly client: KubeClient,
    readonly type: ResourceType,
    private readonly options: InformerOptions = {},
  ) {
    this.synced = new Promise((resolve, reject) => {
      this.markSynced = resolve;
      this.failSync = reject;
    });
  }

  on(handler: (e: InformerEvent<T>) => void): this {
    this.handlers.push(handler);
    return this;
  }

  /** Starts the loop; resolves once the first list is in the cache. */
  start(): Promise<void> {
    this.loop ??= this.run();
    return this.synced;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.currentWatch?.stop();
    await this.loop;
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(filter?: (o: T) => boolean): T[] {
    const all = [...this.cache.values()];
    return filter ? all.filter(filter) : all;
  }

  get size(): number {
    return this.cache.size;
  }

  private transform(obj: T): T {
    return this.options.transform ? (this.options.transform(obj) as T) : obj;
  }

  private emit(e: InformerEvent<T>): void {
    for (const h of this.handlers) {
      try {
        h(e);
      } catch (err) {
        this.options.logger?.error('informer handler failed', { kind: this.type.kind, error: String(err) });
      }
    }
  }

  private async run(): Promise<void> {
    const backoff = new WatchBackoff(this.options.backoff);
    let resourceVersion: string | undefined;
    let first = true;
    while (!this.stopped) {
      let pauseMs: number;
      try {
        if (resourceVersion === undefined) {
          resourceVersion = await this.relist();
          this.options.onListed?.();
          if (first) {
            first = false;
            this.markSynced();
          }
        }
        const round = await this.watchOnce(resourceVersion);
        if (this.stopped) break;
        resourceVersion = round.resourceVersion;
        if (round.error === undefined) {
          pauseMs = backoff.watchEnded(round.ranMs, round.events);
          if (pauseMs > 0) {
            this.options.logger?.warn('watch ended at once without events; backing off', {
              kind: this.type.kind,
              pauseMs: Math.round(pauseMs),
            });
          }
        } else if (isKubeError(round.error, 'Gone')) {
          resourceVersion = undefined;
          pauseMs = backoff.watchEnded(round.ranMs, round.events);
        } else {
          resourceVersion = undefined;
          pauseMs = backoff.failed();
          this.options.logger?.warn('watch failed; listing again', {
            kind: this.type.kind,
            error: round.error.message,
            pauseMs: Math.round(pauseMs),
          });
          this.options.onFailure?.(round.error, pauseMs);
        }
      } catch (err) {
        if (this.stopped) break;
        if (first && !isRetryable(err)) {
          this.failSync(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        resourceVersion = undefined;
        pauseMs = backoff.failed();
        this.options.logger?.warn('list failed; listing again', {
          kind: this.type.kind,
          error: String(err),
          pauseMs: Math.round(pauseMs),
        });
        this.options.onFailure?.(err instanceof Error ? err : new Error(String(err)), pauseMs);
      }
      await pause(pauseMs, this.stopping.signal);
    }
  }

  private async relist(): Promise<string | undefined> {
    // In pages: one response holding thousands of objects would be parsed whole before
    // the transform could shrink them, and the heap keeps the high-water mark.
    const items: T[] = [];
    let list: { apiVersion?: string; metadata: { resourceVersion?: string; continue?: string } };
    let next: string | undefined;
    do {
      const page = await this.client.list<T>(this.type, {
        ...(this.options.namespace !== undefined ? { namespace: this.options.namespace } : {}),
        ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
        ...(this.options.fieldSelector ? { fieldSelector: this.options.fieldSelector } : {}),
        limit: this.options.pageSize ?? 500,
        ...(next ? { continue: next } : {}),
      });
      // Lists omit apiVersion/kind on items; handlers may want them.
      for (const item of page.items)
        items.push(this.transform({ apiVersion: page.apiVersion, kind: this.type.kind, ...item }));
      list = page;
      next = page.metadata.continue || undefined;
    } while (next);
    const seen = new Set<string>();
    for (const obj of items) {
      const key = cacheKey(obj);
      seen.add(key);
      const old = this.cache.get(key);
      this.cache.set(key, obj);
      if (!old) this.emit({ type: 'ADDED', object: obj });
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion)
        this.emit({ type: 'MODIFIED', object: obj, old });
    }
    for (const [key, old] of this.cache) {
      if (!seen.has(key)) {
        this.cache.delete(key);
        this.emit({ type: 'DELETED', object: old });
      }
    }
    return list.metadata.resourceVersion;
  }

  private async watchOnce(resourceVersion: string | undefined): Promise<WatchRound> {
    let rv = resourceVersion;
    let events = 0;
    const started = performance.now();
    const watch = this.client.watch<T>(
      this.type,
      {
        ...(this.options.namespace !== undefined ? { namespace: this.options.namespace } : {}),
        ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
        ...(this.options.fieldSelector ? { fieldSelector: this.options.fieldSelector } : {}),
        ...(rv !== undefined ? { resourceVersion: rv } : {}),
        timeoutSeconds: 240 + Math.floor(Math.random() * 60),
        idleTimeoutMs: this.options.idleTimeoutMs ?? 330_000,
      },
      (event) => {
        events++;
        rv = event.object.metadata.resourceVersion ?? rv;
        if (event.type === 'BOOKMARK') return;
        const object = this.transform(event.object);
        const key = cacheKey(object);
        const old = this.cache.get(key);
        if (event.type === 'DELETED') {
          this.cache.delete(key);
          this.emit({ type: 'DELETED', object });
        } else {
          this.cache.set(key, object);
          this.emit({ type: old ? 'MODIFIED' : 'ADDED', object, ...(old ? { old } : {}) });
        }
      },
    );
    this.currentWatch = watch;
    if (this.stopped) watch.stop();
    let error: Error | undefined;
    try {
      await watch.done;
    } catch (err) {
      error = err instanceof Error ? err : new Error(String(err));
    }
    const round: WatchRound = { resourceVersion: rv, ranMs: performance.now() - started, events };
    return error === undefined ? round : { ...round, error };
  }
}
