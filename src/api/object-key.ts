// An object's identity, typed (apimachinery's types.NamespacedName): what caches are read by,
// work queues carry and reconcilers receive, instead of "namespace/name" strings that every
// user splits again. The text form exists for maps, logs and the status report only.

export interface ObjectKey {
  /** '' for a cluster-scoped object. */
  readonly namespace: string;
  readonly name: string;
}

/** The key of an object, or of a namespace and name read from one (an owner, a reference). */
export function keyOf(obj: { metadata: { namespace?: string | undefined; name: string } }): ObjectKey {
  return { namespace: obj.metadata.namespace ?? '', name: obj.metadata.name };
}

export function objectKey(namespace: string | undefined, name: string): ObjectKey {
  return { namespace: namespace ?? '', name };
}

/** "namespace/name", or "name" for a cluster-scoped object, as kubectl and client-go write it. */
export function formatKey(key: ObjectKey): string {
  return key.namespace ? `${key.namespace}/${key.name}` : key.name;
}

/** The inverse of formatKey: a name never holds a "/", a namespace never does either. */
export function parseKey(text: string): ObjectKey {
  const slash = text.indexOf('/');
  return slash < 0
    ? { namespace: '', name: text }
    : { namespace: text.slice(0, slash), name: text.slice(slash + 1) };
}

/**
 * "namespace/name" of a namespaced object, or of a reference to one, for map keys, logs and
 * messages: the one place such text is built (lint refuses it elsewhere, eslint/object-keys.js).
 * Unlike formatKey it always writes the "/", a missing namespace or name as "".
 */
export function keyText(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? ''}/${name ?? ''}`;
}

/** keyText of an object's metadata. */
export function keyTextOf(obj: {
  metadata: { namespace?: string | undefined; name?: string | undefined };
}): string {
  return keyText(obj.metadata.namespace, obj.metadata.name);
}

export function sameKey(a: ObjectKey, b: ObjectKey): boolean {
  return a.namespace === b.namespace && a.name === b.name;
}

/**
 * A Map keyed by ObjectKey, compared by namespace and name, so that code holding keys never
 * turns them into text just to index by them.
 */
export class KeyMap<V> implements Iterable<[ObjectKey, V]> {
  private readonly entriesByText = new Map<string, [ObjectKey, V]>();

  get size(): number {
    return this.entriesByText.size;
  }

  get(key: ObjectKey): V | undefined {
    return this.entriesByText.get(keyText(key.namespace, key.name))?.[1];
  }

  has(key: ObjectKey): boolean {
    return this.entriesByText.has(keyText(key.namespace, key.name));
  }

  set(key: ObjectKey, value: V): this {
    this.entriesByText.set(keyText(key.namespace, key.name), [
      { namespace: key.namespace, name: key.name },
      value,
    ]);
    return this;
  }

  delete(key: ObjectKey): boolean {
    return this.entriesByText.delete(keyText(key.namespace, key.name));
  }

  *keys(): IterableIterator<ObjectKey> {
    for (const [key] of this.entriesByText.values()) yield key;
  }

  *values(): IterableIterator<V> {
    for (const [, value] of this.entriesByText.values()) yield value;
  }

  [Symbol.iterator](): IterableIterator<[ObjectKey, V]> {
    return this.entriesByText.values();
  }
}
