// Conflict-safe writes, the way the real controllers make them: finalizers through JSON
// patches whose `test` pins the array they were computed from (KubeVirt's
// getPatchFinalizerOps), other changes through read-modify-write with the object's
// resourceVersion. A lost race is retried on a fresh read, a bounded number of times;
// after that the error goes back to the work queue, which retries with backoff.
import { keyText } from '../../src/api/object-key.js';
import type { KubeClient } from '../../src/kube/client.js';
import { isKubeError, isNotFound } from '../../src/kube/errors.js';
import type { KubeObject, ResourceType } from '../../src/kube/resources.js';

const ATTEMPTS = 5;

export type ObjectRef = { namespace?: string; name: string };

export function refOf(obj: KubeObject): ObjectRef {
  return {
    ...(obj.metadata.namespace !== undefined ? { namespace: obj.metadata.namespace } : {}),
    name: obj.metadata.name,
  };
}

/** A JSON patch whose `test` failed: the object changed since we read it. */
export function isStalePatch(err: unknown): boolean {
  return (
    isKubeError(err, 'Invalid') && /rejected our request|test operation|testing value/i.test(err.message)
  );
}

function isLostRace(err: unknown): boolean {
  return isKubeError(err, 'Conflict') || isStalePatch(err);
}

/**
 * Replaces the finalizer list with `change(current)` as long as the list is still what
 * it was; re-reads and recomputes when another writer got there first. Resolves with the
 * written object, or undefined when there was nothing to do or the object is gone.
 */
export async function patchFinalizers<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  current: T,
  change: (finalizers: string[]) => string[],
): Promise<T | undefined> {
  let obj: T | undefined = current;
  for (let attempt = 1; obj; attempt++) {
    const before = obj.metadata.finalizers ?? [];
    const after = change([...before]);
    if (sameList(before, after)) return undefined;
    // A missing array cannot be tested for equality, so then the resourceVersion is pinned.
    const guard =
      obj.metadata.finalizers === undefined
        ? { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion }
        : { op: 'test', path: '/metadata/finalizers', value: before };
    const write =
      obj.metadata.finalizers === undefined
        ? { op: 'add', path: '/metadata/finalizers', value: after }
        : { op: 'replace', path: '/metadata/finalizers', value: after };
    try {
      return await client.patch<T>(type, refOf(obj), [guard, write], 'json');
    } catch (err) {
      if (isKubeError(err, 'NotFound')) return undefined;
      if (!isLostRace(err) || attempt >= ATTEMPTS) throw err;
      obj = await client.find<T>(type, refOf(obj));
    }
  }
  return undefined;
}

export const withFinalizer =
  (name: string) =>
  (list: string[]): string[] =>
    list.includes(name) ? list : [...list, name];

export const withoutFinalizer =
  (name: string) =>
  (list: string[]): string[] =>
    list.filter((f) => f !== name);

/**
 * Read-modify-write with the resourceVersion as precondition: `mutate` gets a copy of
 * the freshest object it can and returns the object to write, or undefined for "nothing
 * to change". The first attempt uses `cached` (an informer's copy) to save a read.
 */
export async function updateWithRetry<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  cached: T | undefined,
  ref: ObjectRef,
  mutate: (copy: T) => T | undefined,
  subresource?: 'status',
): Promise<T | undefined> {
  let obj = cached ?? (await client.find<T>(type, ref));
  for (let attempt = 1; obj; attempt++) {
    const desired = mutate(structuredClone(obj));
    if (!desired) return undefined;
    try {
      return await client.update<T>(type, desired, subresource);
    } catch (err) {
      if (isKubeError(err, 'NotFound')) return undefined;
      if (!isKubeError(err, 'Conflict') || attempt >= ATTEMPTS) throw err;
      obj = await client.find<T>(type, ref);
    }
  }
  return undefined;
}

/** A merge patch that only applies to the version we read (metadata.resourceVersion). */
export async function mergePatchWithRetry<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  cached: T | undefined,
  ref: ObjectRef,
  build: (fresh: T) => Record<string, unknown> | undefined,
): Promise<T | undefined> {
  let obj = cached ?? (await client.find<T>(type, ref));
  for (let attempt = 1; obj; attempt++) {
    const patch = build(obj);
    if (!patch) return undefined;
    const metadata = { ...((patch.metadata as Record<string, unknown> | undefined) ?? {}) };
    metadata.resourceVersion = obj.metadata.resourceVersion;
    try {
      return await client.patch<T>(type, ref, { ...patch, metadata }, 'merge');
    } catch (err) {
      if (isKubeError(err, 'NotFound')) return undefined;
      if (!isKubeError(err, 'Conflict') || attempt >= ATTEMPTS) throw err;
      obj = await client.find<T>(type, ref);
    }
  }
  return undefined;
}

/** DELETE with gracePeriodSeconds 0, as `kubectl delete --force` sends it; false when gone. */
export async function forceDelete(client: KubeClient, type: ResourceType, ref: ObjectRef): Promise<boolean> {
  const ns = ref.namespace !== undefined ? `/namespaces/${encodeURIComponent(ref.namespace)}` : '';
  const base = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  try {
    await client.call<unknown>({
      method: 'DELETE',
      path: `${base}${ns}/${type.plural}/${encodeURIComponent(ref.name)}`,
      body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
      operation: `force-delete ${type.plural} ${keyText(ref.namespace, ref.name)}`,
    });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
