// An OpenSSH authorized_keys line parsed the way Harvester's KeyPair controller does it
// (golang.org/x/crypto/ssh ParseAuthorizedKey): comments and blank lines skipped, an
// optional options field, the key type taken from the decoded blob (not the text label),
// and every failure reported as "ssh: no key found". The fingerprint is the legacy MD5 one.
import crypto from 'node:crypto';

export type ParsedKey = { ok: true; algorithm: string; fingerprint: string } | { ok: false; error: string };

const NO_KEY = 'ssh: no key found';

export function parseAuthorizedKey(text: string): ParsedKey {
  for (const rawLine of text.split('\n')) {
    const line = rawLine.split('\r')[0]?.trim() ?? '';
    if (line === '' || line.startsWith('#')) continue;
    const firstSpace = line.search(/[ \t]/);
    if (firstSpace < 0) continue;
    const direct = parseKeyField(line.slice(firstSpace));
    if (direct) return direct;
    // Maybe the line starts with options: skip them (quotes may hold spaces) and retry.
    const afterOptions = skipOptions(line);
    if (afterOptions === undefined) continue;
    const space = afterOptions.search(/[ \t]/);
    if (space < 0) continue;
    const withOptions = parseKeyField(afterOptions.slice(space));
    if (withOptions) return withOptions;
  }
  return { ok: false, error: NO_KEY };
}

/** "<base64 blob> [comment]" -> the key, or undefined when it is not one. */
function parseKeyField(field: string): ParsedKey | undefined {
  const trimmed = field.trim();
  const end = trimmed.search(/[ \t]/);
  const encoded = end < 0 ? trimmed : trimmed.slice(0, end);
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return undefined;
  const blob = Buffer.from(encoded, 'base64');
  const algorithm = validWireKey(blob);
  if (!algorithm) return undefined;
  const digest = crypto.createHash('md5').update(blob).digest('hex');
  return { ok: true, algorithm, fingerprint: digest.match(/../g)?.join(':') ?? '' };
}

function skipOptions(line: string): string | undefined {
  let inQuote = false;
  let i = 0;
  for (; i < line.length; i++) {
    const c = line[i];
    if (!inQuote && (c === ' ' || c === '\t')) break;
    if (c === '"' && (i === 0 || line[i - 1] !== '\\')) inQuote = !inQuote;
  }
  while (i < line.length && (line[i] === ' ' || line[i] === '\t')) i++;
  return i === line.length ? undefined : line.slice(i);
}

/** SSH wire-format reader: uint32-length-prefixed strings and mpints. */
class Wire {
  private at = 0;
  constructor(private readonly buf: Buffer) {}

  string(): Buffer | undefined {
    if (this.at + 4 > this.buf.length) return undefined;
    const len = this.buf.readUInt32BE(this.at);
    if (this.at + 4 + len > this.buf.length) return undefined;
    const out = this.buf.subarray(this.at + 4, this.at + 4 + len);
    this.at += 4 + len;
    return out;
  }

  /** A non-negative mpint as a bigint (negative ones are refused, as Go refuses them). */
  mpint(): bigint | undefined {
    const bytes = this.string();
    if (!bytes || (bytes.length > 0 && ((bytes[0] ?? 0) & 0x80) !== 0)) return undefined;
    return bytes.length === 0 ? 0n : BigInt(`0x${bytes.toString('hex')}`);
  }

  get done(): boolean {
    return this.at === this.buf.length;
  }
}

const CURVES: Record<string, { name: string; jwk: string; size: number }> = {
  'ecdsa-sha2-nistp256': { name: 'nistp256', jwk: 'P-256', size: 32 },
  'ecdsa-sha2-nistp384': { name: 'nistp384', jwk: 'P-384', size: 48 },
  'ecdsa-sha2-nistp521': { name: 'nistp521', jwk: 'P-521', size: 66 },
  'sk-ecdsa-sha2-nistp256@openssh.com': { name: 'nistp256', jwk: 'P-256', size: 32 },
};

/** The algorithm name when `blob` is a well-formed public key of a kind ssh knows. */
function validWireKey(blob: Buffer): string | undefined {
  const wire = new Wire(blob);
  const algorithm = wire.string()?.toString('latin1');
  if (!algorithm) return undefined;
  const ok = (() => {
    switch (algorithm) {
      case 'ssh-rsa': {
        const e = wire.mpint();
        const n = wire.mpint();
        return e !== undefined && n !== undefined && e < 1n << 24n && e >= 3n && e % 2n === 1n;
      }
      case 'ssh-dss':
        return [wire.mpint(), wire.mpint(), wire.mpint(), wire.mpint()].every((v) => v !== undefined);
      case 'ssh-ed25519':
        return wire.string()?.length === 32;
      case 'sk-ssh-ed25519@openssh.com':
        return wire.string()?.length === 32 && wire.string() !== undefined;
      default: {
        const curve = CURVES[algorithm];
        if (!curve) return false;
        const curveName = wire.string()?.toString('latin1');
        const point = wire.string();
        const onCurve = curveName === curve.name && point !== undefined && isPointOnCurve(point, curve);
        return onCurve && (!algorithm.startsWith('sk-') || wire.string() !== undefined);
      }
    }
  })();
  return ok && wire.done ? algorithm : undefined;
}

function isPointOnCurve(point: Buffer, curve: { jwk: string; size: number }): boolean {
  if (point.length !== 1 + 2 * curve.size || point[0] !== 0x04) return false;
  try {
    crypto.createPublicKey({
      key: {
        kty: 'EC',
        crv: curve.jwk,
        x: point.subarray(1, 1 + curve.size).toString('base64url'),
        y: point.subarray(1 + curve.size).toString('base64url'),
      },
      format: 'jwk',
    });
    return true;
  } catch {
    return false;
  }
}
