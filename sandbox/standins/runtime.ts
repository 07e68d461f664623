// What the stand-in controllers share besides the manager (src/kube/manager.ts): owner keys,
// JSON comparison blind to key order, timestamps, and the KubeVirt stand-ins' old interface.
import { formatKey, keyOf as objectKeyOf, parseKey } from '../../src/api/object-key.js';
import type { InformerEvent } from '../../src/kube/informer.js';
import type { Cache, Controller, Manager } from '../../src/kube/manager.js';
import type { KubeObject, ResourceType } from '../../src/kube/resources.js';
import type { ReconcileResult } from '../../src/kube/work-queue.js';
import type { Logger } from '../../src/log/logger.js';

// The KubeVirt stand-ins' old interface, kept as a thin path onto the same manager so that they
// share its caches and lifecycle; it goes with them (they are to be replaced by the real
// virt-api and virt-controller). Everything else declares its controllers on ctx.manager.
export class SharedInformers {
  constructor(readonly manager: Manager) {}

  get<T extends KubeObject>(type: ResourceType, labelSelector?: string): LegacyInformer<T> {
    return new LegacyInformer(
      this.manager,
      this.manager.cache<T>({ type, ...(labelSelector ? { labelSelector } : {}) }),
    );
  }
}

/** A shared cache read by "namespace/name" strings. */
export class LegacyInformer<T extends KubeObject> {
  constructor(
    readonly manager: Manager,
    readonly cache: Cache<T>,
  ) {}

  get(key: string): T | undefined {
    return this.cache.get(parseKey(key));
  }

  list(filter?: (o: T) => boolean): T[] {
    return this.cache.list(filter);
  }
}

/** A controller declared on the manager of the first cache it watches, keyed by strings. */
export class Reconciler {
  private controller: Controller | undefined;

  constructor(
    readonly name: string,
    private readonly reconcile: (key: string) => Promise<ReconcileResult>,
    readonly logger: Logger,
  ) {}

  enqueue(key: string | undefined): void {
    if (key) this.declared().enqueue(parseKey(key));
  }

  /** Enqueues what `keys` maps each event of `informer` to (default: the object's own key). */
  watch<T extends KubeObject>(
    informer: LegacyInformer<T>,
    keys: (e: InformerEvent<T>) => Array<string | undefined> | string | undefined = (e) =>
      formatKey(objectKeyOf(e.object)),
  ): this {
    this.controller ??= informer.manager.controller(this.name, {
      reconcile: (key) => this.reconcile(formatKey(key)),
      logger: this.logger,
    });
    this.controller.watch(informer.cache, (e) => {
      const mapped = keys(e);
      return (Array.isArray(mapped) ? mapped : [mapped]).flatMap((k) => (k ? [parseKey(k)] : []));
    });
    return this;
  }

  private declared(): Controller {
    if (!this.controller) throw new Error(`${this.name}: enqueue before it watches anything`);
    return this.controller;
  }
}

export const keyOf = (namespace: string | undefined, name: string | undefined): string =>
  namespace ? `${namespace}/${name ?? ''}` : (name ?? '');

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
