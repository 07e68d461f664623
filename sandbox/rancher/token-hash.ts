// How Rancher stores a token's secret when token hashing is on (Rancher >= 2.9 can): a salted
// hash tagged with its version, and the annotation below set to "true". Formats (rancher
// pkg/auth/tokens/hashers): "$3:1:<salt>:<sha3-512(salt||secret)>" (the default hasher) and
// "$2:<salt>:<sha256(salt||secret)>", salt 8 random bytes, both base64 without padding.
import crypto from 'node:crypto';

export const TOKEN_HASHED_ANNOTATION = 'authn.management.cattle.io/token-hashed';

const SALT_BYTES = 8;
const b64 = (buf: Buffer): string => buf.toString('base64').replace(/=+$/, '');

export function hashTokenSecret(secret: string): string {
  const salt = crypto.randomBytes(SALT_BYTES);
  const digest = crypto.createHash('sha3-512').update(salt).update(secret, 'utf8').digest();
  return `$3:1:${b64(salt)}:${b64(digest)}`;
}

/** True when `secret` matches a stored hash (either format); false for anything malformed. */
export function verifyTokenSecret(storedHash: string, secret: string): boolean {
  const parts = storedHash.replace(/^\$/, '').split(':');
  let algorithm: string;
  let salt: string | undefined;
  let expected: string | undefined;
  if (parts[0] === '3' && parts[1] === '1' && parts.length === 4) {
    algorithm = 'sha3-512';
    [, , salt, expected] = parts;
  } else if (parts[0] === '2' && parts.length === 3) {
    algorithm = 'sha256';
    [, salt, expected] = parts;
  } else {
    return false;
  }
  if (!salt || !expected) return false;
  const want = Buffer.from(expected, 'base64');
  const got = crypto
    .createHash(algorithm)
    .update(Buffer.from(salt, 'base64'))
    .update(secret, 'utf8')
    .digest();
  return want.length === got.length && want.length > 0 && crypto.timingSafeEqual(want, got);
}

/** Compares a presented secret with a stored token: hashed (per annotation) or plain. */
export function tokenSecretMatches(
  stored: { token?: string; metadata: { annotations?: Record<string, string> } },
  secret: string,
): boolean {
  const value = stored.token ?? '';
  if (stored.metadata.annotations?.[TOKEN_HASHED_ANNOTATION] === 'true')
    return verifyTokenSecret(value, secret);
  const a = Buffer.from(value);
  const b = Buffer.from(secret);
  return a.length === b.length && a.length > 0 && crypto.timingSafeEqual(a, b);
}
