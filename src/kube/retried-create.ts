import { KubeError } from './errors.js';
import type { KubeObject, NewObject } from './resources.js';

/** Codes of failures before a connection existed: the request never reached the server. */
const NEVER_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
]);

/**
 * Whether a failed request may nevertheless have been carried out by the server.
 *
 * A create is not idempotent, yet KubeClient retries it: after a 5xx, a 504 or a connection
 * that broke before the answer, the first POST may well have been carried out, and the retry
 * then meets its own object as AlreadyExists. This and holdsWhatWasSent decide when an AlreadyExists is that
 * echo, so the caller gets the object it created instead of a failure.
 */
export function mayHaveBeenCarriedOut(err: unknown): boolean {
  if (!(err instanceof KubeError)) return false;
  if (err.kind === 'ServerError' || err.kind === 'Timeout' || err.kind === 'Unknown') return true;
  if (err.kind === 'Unreachable') {
    const code = (err.extra.cause as { code?: unknown } | undefined)?.code;
    return !(typeof code === 'string' && NEVER_CONNECTED.has(code));
  }
  // 429 and the refusals of a server still starting come before the request is served.
  return false;
}

/** Set by the server on create; never part of what a caller meant. */
const SERVER_METADATA = new Set([
  'uid',
  'resourceVersion',
  'creationTimestamp',
  'generation',
  'managedFields',
  'selfLink',
]);

/**
 * Whether `found`, read after an AlreadyExists, holds everything `sent` asked for.
 *
 * The object is recognised by its content: an apiserver only adds to what it was sent
 * (uid, resourceVersion, timestamps, defaults, labels from webhooks), so the stored object
 * holds every field of the one POSTed. Objects we create carry content no one else sends
 * (machine and VM names, random disk names, lease holder and timestamps); a second writer
 * that created the very same content would have asked for the same result. A server that
 * rewrites a field (a quantity in canonical form, a mutating webhook) makes the object look
 * foreign: the AlreadyExists is then reported, as it was before.
 *
 * A POST with generateName cannot be recognised (each attempt gets a new name), so its
 * retry may leave a duplicate; the only such create is an Event's, where a duplicate is
 * harmless and a lost Warning is not.
 */
export function holdsWhatWasSent(sent: NewObject<KubeObject>, found: KubeObject): boolean {
  if (found.metadata.deletionTimestamp) return false;
  const metadata = Object.fromEntries(Object.entries(sent.metadata).filter(([k]) => !SERVER_METADATA.has(k)));
  if (!contains(found.metadata, metadata)) return false;
  const isSecret = sent.kind === 'Secret' && (sent.apiVersion ?? 'v1') === 'v1';
  const foundFields = found as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(sent)) {
    // Status is dropped on create where a status subresource exists.
    if (key === 'metadata' || key === 'status') continue;
    if (isSecret && (key === 'data' || key === 'stringData')) {
      if (!secretDataMatches(key, value, foundFields['data'])) return false;
      continue;
    }
    if (!contains(foundFields[key], value)) return false;
  }
  return true;
}

/** What the server may leave out of a stored object when it was sent empty (Go's omitempty). */
function isEmpty(value: unknown): boolean {
  if (value === null || value === undefined || value === '' || value === 0 || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && Object.keys(value).length === 0;
}

function contains(have: unknown, want: unknown): boolean {
  if (have === undefined || have === null) return isEmpty(want);
  if (Array.isArray(want)) {
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => contains(have[i], w));
  }
  if (want !== null && typeof want === 'object') {
    if (typeof have !== 'object' || Array.isArray(have)) return false;
    const fields = have as Record<string, unknown>;
    return Object.entries(want).every(([k, w]) => contains(fields[k], w));
  }
  return have === want;
}

/** A Secret stores stringData merged into data, base64 in canonical form. */
function secretDataMatches(key: 'data' | 'stringData', sent: unknown, storedData: unknown): boolean {
  if (isEmpty(sent)) return true;
  if (typeof sent !== 'object' || sent === null) return false;
  const stored = (storedData ?? {}) as Record<string, unknown>;
  return Object.entries(sent).every(([k, v]) => {
    const have = stored[k];
    if (typeof have !== 'string' || typeof v !== 'string') return false;
    const bytes = Buffer.from(have, 'base64');
    return key === 'stringData' ? bytes.toString('utf8') === v : bytes.equals(Buffer.from(v, 'base64'));
  });
}
