// A list-and-watch cache of one kind, like client-go's informer: the initial list,
// then a watch from its resourceVersion, resumed when it ends, relisted after 410 or an
// error, so handlers see every change exactly as the cache does. Re-opening is paced by
// watch-backoff.ts: errors and watches that end at once without events back off.
import { formatKey, keyOf, type ObjectKey } from '../api/object-key.js';
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
   * SetTransform): keep only the fields used, so a large cache stays small. Undefined drops
   * the object (not wanted, or not of the shape the cache's readers rely on): a list leaves it
   * out, and a watch event that drops an object already cached removes it, as a deletion would.
   */
  transform?: (obj: KubeObject) => KubeObject | undefined;
  /**
   * The most objects the cache may hold (a bound on what someone else's apiserver can make us
   * keep). A list that would exceed it, or has more pages than it can fill, and a watch event
   * that would add one more, fail with CacheBoundExceeded: the cache keeps what it had, and the
   * informer lists again after its backoff (onFailure is told). Default: no bound.
   */
  maxObjects?: number;
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

/**
 * The server answered more than the informer's bound allows (more objects, more pages, or a
 * continue token given twice): nothing of that answer is kept.
 */
export class CacheBoundExceeded extends Error {
  constructor(
    readonly kind: string,
    readonly limit: number,
    what: string,
  ) {
    super(`${kind}: ${what}`);
    this.name = 'CacheBoundExceeded';
  }
}

/**
 * kube-apiserver's continue tokens are base64 of a small JSON (a resourceVersion and an etcd key):
 * a few hundred characters. Each is kept until the list ends (to see one come back) and sent.
 */
export const MAX_CONTINUE_TOKEN = 8192;

/** The next page's continue token, if any; a token too long or given before ends the list. */
function nextPage(
  token: unknown,
  tokens: Set<string>,
  kind: string,
  bound: number | undefined,
): string | undefined {
  if (typeof token !== 'string' || token === '') return undefined;
  if (token.length > MAX_CONTINUE_TOKEN)
    throw new CacheBoundExceeded(
      kind,
      bound ?? 0,
      `the list gave a continue token longer than ${MAX_CONTINUE_TOKEN} characters`,
    );
  if (tokens.has(token))
    throw new CacheBoundExceeded(
      kind,
      bound ?? 0,
      'the list gave the same continue token twice (it would never end)',
    );
  tokens.add(token);
  return token;
}

/** Pages a bounded list may take beyond what its bound fills (a server may answer short pages). */
const SPARE_PAGES = 10;

/** What a watch event's object says of itself, whatever its shape. */
function rawMeta(o: unknown): {
  isObject: boolean;
  name?: unknown;
  namespace?: unknown;
  resourceVersion?: unknown;
} {
  if (typeof o !== 'object' || o === null) return { isObject: false };
  const m = (o as { metadata?: unknown }).metadata;
  if (typeof m !== 'object' || m === null) return { isObject: true };
  const meta = m as Record<string, unknown>;
  return {
    isObject: true,
    name: meta.name,
    namespace: meta.namespace,
    resourceVersion: meta.resourceVersion,
  };
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
  private readonly indexers = new Map<string, (o: T) => readonly string[]>();
  private readonly indices = new Map<string, Map<string, Set<string>>>();

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
    if (!filter) return [...this.cache.values()];
    const out: T[] = [];
    for (const o of this.cache.values()) if (filter(o)) out.push(o);
    return out;
  }

  get size(): number {
    return this.cache.size;
  }

  /**
   * Adds an index (client-go's Indexers): `values` gives the index values of an object, and
   * byIndex returns the cached objects with a value without looking at the others. Before start().
   */
  addIndex(name: string, values: (o: T) => readonly string[]): void {
    if (this.loop) throw new Error(`index ${name} added after the ${this.type.kind} informer started`);
    if (this.indexers.has(name)) throw new Error(`index ${name} added twice`);
    this.indexers.set(name, values);
    this.indices.set(name, new Map());
  }

  byIndex(name: string, value: string): T[] {
    const index = this.indices.get(name);
    if (!index) throw new Error(`no index ${name} on the ${this.type.kind} informer`);
    return [...(index.get(value) ?? [])].flatMap((key) => {
      const o = this.cache.get(key);
      return o ? [o] : [];
    });
  }

  private store(key: string, obj: T, old: T | undefined): void {
    if (old) this.unindex(key, old);
    this.cache.set(key, obj);
    for (const [name, values] of this.indexers) {
      const index = this.indices.get(name) as Map<string, Set<string>>;
      for (const v of values(obj)) {
        let keys = index.get(v);
        if (!keys) index.set(v, (keys = new Set()));
        keys.add(key);
      }
    }
  }

  private remove(key: string, old: T): void {
    this.unindex(key, old);
    this.cache.delete(key);
  }

  private unindex(key: string, old: T): void {
    for (const [name, values] of this.indexers) {
      const index = this.indices.get(name) as Map<string, Set<string>>;
      for (const v of values(old)) {
        const keys = index.get(v);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(v);
      }
    }
  }

  private transform(obj: T): T | undefined {
    return this.options.transform ? (this.options.transform(obj) as T | undefined) : obj;
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

  /** Every page of the list, transformed, within the bound; and the list's resourceVersion. */
  private async listAll(): Promise<{ items: T[]; resourceVersion: string | undefined }> {
    // In pages: one response holding thousands of objects would be parsed whole before
    // the transform could shrink them, and the heap keeps the high-water mark.
    const items: T[] = [];
    let resourceVersion: unknown;
    let next: string | undefined;
    const pageSize = this.options.pageSize ?? 500;
    const bound = this.options.maxObjects;
    const maxPages = bound === undefined ? Infinity : Math.ceil(bound / pageSize) + SPARE_PAGES;
    const tokens = new Set<string>();
    let pages = 0;
    do {
      if (++pages > maxPages)
        throw new CacheBoundExceeded(
          this.type.kind,
          bound ?? 0,
          `the list goes on past ${maxPages} pages of ${pageSize} (a bound of ${bound} objects)`,
        );
      const page = await this.client.list<T>(this.type, {
        ...(this.options.namespace !== undefined ? { namespace: this.options.namespace } : {}),
        ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
        ...(this.options.fieldSelector ? { fieldSelector: this.options.fieldSelector } : {}),
        limit: pageSize,
        ...(next ? { continue: next } : {}),
      });
      const pageItems: unknown = page.items;
      if (!Array.isArray(pageItems))
        throw new Error(`list ${this.type.kind}: the answer has no list of items`);
      // Lists omit apiVersion/kind on items; handlers may want them.
      for (const item of pageItems as T[]) {
        if (typeof item !== 'object' || item === null) continue;
        const kept = this.transform({ apiVersion: page.apiVersion, kind: this.type.kind, ...item });
        if (!kept) continue;
        if (bound !== undefined && items.length >= bound)
          throw new CacheBoundExceeded(this.type.kind, bound, `more than ${bound} objects listed`);
        items.push(kept);
      }
      resourceVersion = page.metadata?.resourceVersion;
      next = nextPage(page.metadata?.continue, tokens, this.type.kind, bound);
    } while (next);
    return { items, resourceVersion: typeof resourceVersion === 'string' ? resourceVersion : undefined };
  }

  private async relist(): Promise<string | undefined> {
    const { items, resourceVersion } = await this.listAll();
    const seen = new Set<string>();
    for (const obj of items) {
      const key = cacheKey(obj);
      seen.add(key);
      const old = this.cache.get(key);
      this.store(key, obj, old);
      if (!old) this.emit({ type: 'ADDED', object: obj });
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion)
        this.emit({ type: 'MODIFIED', object: obj, old });
    }
    for (const [key, old] of this.cache) {
      if (!seen.has(key)) {
        this.remove(key, old);
        this.emit({ type: 'DELETED', object: old });
      }
    }
    return resourceVersion;
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
        const raw = rawMeta(event.object);
        if (typeof raw.resourceVersion === 'string') rv = raw.resourceVersion;
        if (event.type === 'BOOKMARK') return;
        const object = raw.isObject ? this.transform(event.object) : undefined;
        if (!object) {
          // Not kept: if an object of that name was, it is gone from the cache.
          const { name, namespace } = raw;
          if (typeof name !== 'string' || (namespace !== undefined && typeof namespace !== 'string')) return;
          const key = formatKey({ name, ...(namespace !== undefined ? { namespace } : {}) } as ObjectKey);
          const old = this.cache.get(key);
          if (old) {
            this.remove(key, old);
            this.emit({ type: 'DELETED', object: old });
          }
          return;
        }
        const key = cacheKey(object);
        const old = this.cache.get(key);
        const bound = this.options.maxObjects;
        if (event.type !== 'DELETED' && !old && bound !== undefined && this.cache.size >= bound)
          throw new CacheBoundExceeded(this.type.kind, bound, `a watch event would add object ${bound + 1}`);
        if (event.type === 'DELETED') {
          if (old) this.remove(key, old);
          this.emit({ type: 'DELETED', object });
        } else {
          this.store(key, object, old);
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
