import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import { parseAuthorizedKey } from './ssh-key.js';

/** An OpenSSH public key line built from a freshly generated key pair. */
function opensshLine(type: 'ed25519' | 'rsa' | 'ec'): { line: string; blob: Buffer } {
  const str = (b: Buffer | string): Buffer => {
    const data = typeof b === 'string' ? Buffer.from(b) : b;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    return Buffer.concat([len, data]);
  };
  const mpint = (b64url: string): Buffer => {
    let bytes = Buffer.from(b64url, 'base64url');
    if ((bytes[0] ?? 0) & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
    return str(bytes);
  };
  let blob: Buffer;
  let label: string;
  if (type === 'ed25519') {
    const jwk = crypto.generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    label = 'ssh-ed25519';
    blob = Buffer.concat([str(label), str(Buffer.from(jwk.x ?? '', 'base64url'))]);
  } else if (type === 'rsa') {
    const jwk = crypto
      .generateKeyPairSync('rsa', { modulusLength: 2048 })
      .publicKey.export({ format: 'jwk' });
    label = 'ssh-rsa';
    blob = Buffer.concat([str(label), mpint(jwk.e ?? ''), mpint(jwk.n ?? '')]);
  } else {
    const jwk = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    label = 'ecdsa-sha2-nistp256';
    const point = Buffer.concat([
      Buffer.from([4]),
      Buffer.from(jwk.x ?? '', 'base64url'),
      Buffer.from(jwk.y ?? '', 'base64url'),
    ]);
    blob = Buffer.concat([str(label), str('nistp256'), str(point)]);
  }
  return { line: `${label} ${blob.toString('base64')} user@host`, blob };
}

const md5Fingerprint = (blob: Buffer): string =>
  (crypto.createHash('md5').update(blob).digest('hex').match(/../g) ?? []).join(':');

describe('authorized key parsing', () => {
  for (const type of ['ed25519', 'rsa', 'ec'] as const) {
    it(`accepts a ${type} key and gives its legacy MD5 fingerprint`, () => {
      const { line, blob } = opensshLine(type);
      const parsed = parseAuthorizedKey(line);
      assert.ok(parsed.ok);
      assert.equal(parsed.fingerprint, md5Fingerprint(blob));
      assert.match(parsed.fingerprint, /^([0-9a-f]{2}:){15}[0-9a-f]{2}$/);
    });
  }

  it('skips comments, blank lines and an options field', () => {
    const { line, blob } = opensshLine('ed25519');
    const parsed = parseAuthorizedKey(`# mine\n\nno-pty,command="echo a b" ${line}\n`);
    assert.ok(parsed.ok);
    assert.equal(parsed.fingerprint, md5Fingerprint(blob));
  });

  it('refuses garbage, bad base64, truncated blobs and points off the curve with "ssh: no key found"', () => {
    const { blob } = opensshLine('ec');
    const offCurve = Buffer.from(blob);
    offCurve[offCurve.length - 1] = (offCurve[offCurve.length - 1] ?? 0) ^ 0xff;
    for (const bad of [
      'not a key',
      'ssh-ed25519 AAAA!!!!',
      `ssh-rsa ${blob.subarray(0, blob.length - 3).toString('base64')}`,
      `ecdsa-sha2-nistp256 ${offCurve.toString('base64')}`,
      '',
    ]) {
      assert.deepEqual(parseAuthorizedKey(bad), { ok: false, error: 'ssh: no key found' }, bad);
    }
  });
});
