// SSH key pairs for machines, as rancher-machine expects them: id_rsa (PEM, 0600)
// and id_rsa.pub (OpenSSH format) in the machine's store directory.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import { registerSecret } from '../log/redact.js';

function sshString(buf: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(buf.length);
  return Buffer.concat([len, buf]);
}

/** An SSH mpint: big-endian, with a leading zero byte when the high bit is set. */
function sshMpint(unsigned: Buffer): Buffer {
  let i = 0;
  while (i < unsigned.length - 1 && unsigned[i] === 0) i++;
  let bytes = unsigned.subarray(i);
  if ((bytes[0] ?? 0) & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return sshString(bytes);
}

export function rsaPublicKeyToOpenSsh(publicKey: crypto.KeyObject, comment = ''): string {
  const jwk = publicKey.export({ format: 'jwk' });
  if (jwk.kty !== 'RSA' || !jwk.n || !jwk.e) throw new Error('not an RSA public key');
  const blob = Buffer.concat([
    sshString(Buffer.from('ssh-rsa')),
    sshMpint(Buffer.from(jwk.e, 'base64url')),
    sshMpint(Buffer.from(jwk.n, 'base64url')),
  ]);
  return `ssh-rsa ${blob.toString('base64')}${comment ? ' ' + comment : ''}`;
}

export interface SshKeyPair {
  privateKeyPem: string;
  publicKey: string;
}

function keyPairOf(privateKey: crypto.KeyObject, publicKey: crypto.KeyObject): SshKeyPair {
  const privateKeyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  registerSecret(privateKeyPem);
  return { privateKeyPem, publicKey: rsaPublicKeyToOpenSsh(publicKey) };
}

export function generateSshKeyPair(): SshKeyPair {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return keyPairOf(privateKey, publicKey);
}

/** The same, made on libuv's thread pool: the event loop (and requests in flight) go on meanwhile. */
export function generateSshKeyPairInBackground(): Promise<SshKeyPair> {
  return new Promise((resolve, reject) => {
    crypto.generateKeyPair('rsa', { modulusLength: 2048 }, (err, publicKey, privateKey) => {
      if (err) reject(err);
      else resolve(keyPairOf(privateKey, publicKey));
    });
  });
}

/** Writes id_rsa (0600) and id_rsa.pub (0644) atomically enough for one writer. */
export async function writeSshKeyPair(privateKeyPath: string, pair: SshKeyPair): Promise<void> {
  await fs.writeFile(privateKeyPath, pair.privateKeyPem, { mode: 0o600 });
  await fs.chmod(privateKeyPath, 0o600);
  await fs.writeFile(`${privateKeyPath}.pub`, pair.publicKey + '\n', { mode: 0o644 });
}

/** The public key of a given private key (PEM or OpenSSH), from `<path>.pub` when present. */
export async function readPublicKeyFor(privateKeyPath: string): Promise<string> {
  try {
    return (await fs.readFile(`${privateKeyPath}.pub`, 'utf8')).trim();
  } catch {
    const pem = await fs.readFile(privateKeyPath, 'utf8');
    registerSecret(pem);
    const key = crypto.createPublicKey(pem);
    return rsaPublicKeyToOpenSsh(key);
  }
}
