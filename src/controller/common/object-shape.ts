// Shape checks for objects someone else writes, where they enter a cache (the slim*
// transforms): a field read later must be of the type the code reads it as and of a sane size,
// else the whole object is dropped and counted by reason, never thrown on later in another
// cluster's path. Pure; each check names what is wrong in a few words (a metric label value).

/** Kubernetes' longest object name (a DNS-1123 subdomain), and the longest namespace (a label). */
export const MAX_NAME = 253;
export const MAX_NAMESPACE = 63;
/** A resourceVersion, uid or timestamp is short: anything longer is not one. */
export const MAX_TOKEN = 128;
/** Label values are at most 63 characters, annotation values (all together) 256 KiB. */
export const MAX_VALUE = 256 * 1024;
/** More labels or annotations than this on one object is not a real object. */
export const MAX_ENTRIES = 512;

export class Malformed extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'Malformed';
  }
}

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A record, or throws Malformed(`reason`); undefined when absent and `optional`. */
export function record(v: unknown, reason: string): Record<string, unknown> {
  if (!isRecord(v)) throw new Malformed(reason);
  return v;
}

export function optionalRecord(v: unknown, reason: string): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return undefined;
  return record(v, reason);
}

/** A string of 1..max characters, or throws Malformed(`reason`). */
export function text(v: unknown, reason: string, max = MAX_NAME): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > max) throw new Malformed(reason);
  return v;
}

/** Absent (undefined or null), or a string of at most `max` characters (empty allowed). */
export function optionalText(v: unknown, reason: string, max = MAX_NAME): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max) throw new Malformed(reason);
  return v;
}

/**
 * A Secret's values are base64 of at most Kubernetes' 1 MiB per Secret: an oversized credential
 * must reach the credential checks, which mark it invalid naming the field, not vanish here.
 */
export const MAX_SECRET_VALUE = 2 * 1024 * 1024;

/** Labels, annotations or a Secret's data: absent, or a record of strings, bounded in count and size. */
export function optionalStringMap(
  v: unknown,
  reason: string,
  maxValue = MAX_VALUE,
): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isRecord(v)) throw new Malformed(reason);
  const entries = Object.entries(v);
  if (entries.length > MAX_ENTRIES) throw new Malformed(reason);
  for (const [k, value] of entries)
    if (k.length > MAX_NAME + 64 || typeof value !== 'string' || value.length > maxValue)
      throw new Malformed(reason);
  return v as Record<string, string>;
}

/**
 * An object's metadata as the caches read it: a name, a namespace when present, resourceVersion,
 * uid and deletionTimestamp strings, labels and annotations maps of strings, owner references
 * with string kinds and names.
 */
export function checkMeta(o: unknown): void {
  const m = record(record(o, 'not-an-object').metadata, 'metadata');
  text(m.name, 'metadata.name');
  optionalText(m.namespace, 'metadata.namespace', MAX_NAMESPACE);
  for (const k of ['uid', 'resourceVersion', 'deletionTimestamp'] as const)
    optionalText(m[k], `metadata.${k}`, MAX_TOKEN);
  optionalStringMap(m.labels, 'metadata.labels');
  optionalStringMap(m.annotations, 'metadata.annotations');
  const owners = m.ownerReferences;
  if (owners !== undefined && owners !== null) {
    if (!Array.isArray(owners) || owners.length > MAX_ENTRIES)
      throw new Malformed('metadata.ownerReferences');
    for (const owner of owners as unknown[]) {
      const r = record(owner, 'metadata.ownerReferences');
      optionalText(r.kind, 'metadata.ownerReferences', MAX_NAME);
      optionalText(r.name, 'metadata.ownerReferences', MAX_NAME);
    }
  }
}

/**
 * Runs a slim transform behind its shape check: the slimmed object, or undefined (dropped) with
 * `onDropped` told the reason. A transform that throws on an odd field counts as malformed too.
 */
export function shapeChecked<T>(
  slim: (o: T) => T | undefined,
  onDropped: (reason: string) => void,
): (o: T) => T | undefined {
  return (o) => {
    try {
      return slim(o);
    } catch (err) {
      onDropped(err instanceof Malformed ? err.reason : 'unreadable');
      return undefined;
    }
  };
}
