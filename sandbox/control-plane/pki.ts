// Certificates and keys for a control plane, made with openssl: one CA that signs
// the apiserver's serving certificate, client certificates (admin, controller manager)
// and the sandbox proxy's serving certificate; an EC key pair for service-account tokens.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export class PkiError extends Error {}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (err) {
    const e = err as { code?: string; stderr?: string };
    if (e.code === 'ENOENT')
      throw new PkiError(
        "step 'make certificates': openssl is not installed; install Debian's openssl package",
      );
    throw new PkiError(
      `step 'make certificates': openssl ${args[0]} failed: ${(e.stderr ?? '').trim().split('\n')[0]}`,
    );
  }
}

export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  caPem: string;
}

export async function createCa(dir: string, commonName: string): Promise<Pki> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], dir);
  await openssl(
    ['req', '-x509', '-new', '-key', 'ca.key', '-subj', `/CN=${commonName}`, '-days', '30', '-out', 'ca.crt'],
    dir,
  );
  return {
    dir,
    caCert: path.join(dir, 'ca.crt'),
    caKey: path.join(dir, 'ca.key'),
    caPem: await fs.readFile(path.join(dir, 'ca.crt'), 'utf8'),
  };
}

export interface IssuedCert {
  certPath: string;
  keyPath: string;
  certPem: string;
  keyPem: string;
}

/**
 * Issues a certificate signed by the CA: a server one (SANs 127.0.0.1, ::1, localhost and any
 * `dnsNames`) or a client one.
 */
export async function issueCert(
  pki: Pki,
  baseName: string,
  subject: { commonName: string; organization?: string | string[] },
  usage: 'server' | 'client',
  extra: { dnsNames?: string[] } = {},
): Promise<IssuedCert> {
  const { dir } = pki;
  const key = `${baseName}.key`;
  const csr = `${baseName}.csr`;
  const crt = `${baseName}.crt`;
  const ext = `${baseName}.ext`;
  const organizations = [subject.organization ?? []].flat();
  const subj = `/CN=${subject.commonName}` + organizations.map((o) => `/O=${o}`).join('');
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key], dir);
  await openssl(['req', '-new', '-key', key, '-subj', subj, '-out', csr], dir);
  const extensions =
    usage === 'server'
      ? `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${[
          'IP:127.0.0.1',
          'IP:::1',
          'DNS:localhost',
          ...(extra.dnsNames ?? []).map((d) => `DNS:${d}`),
        ].join(',')}\n`
      : 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n';
  await fs.writeFile(path.join(dir, ext), extensions);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '30',
      '-extfile',
      ext,
      '-out',
      crt,
    ],
    dir,
  );
  await fs.chmod(path.join(dir, key), 0o600);
  return {
    certPath: path.join(dir, crt),
    keyPath: path.join(dir, key),
    certPem: await fs.readFile(path.join(dir, crt), 'utf8'),
    keyPem: await fs.readFile(path.join(dir, key), 'utf8'),
  };
}

/** The service-account token signing key pair. */
export async function createServiceAccountKeys(pki: Pki): Promise<{ publicKey: string; privateKey: string }> {
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'sa.key'], pki.dir);
  await openssl(['ec', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], pki.dir);
  return { publicKey: path.join(pki.dir, 'sa.pub'), privateKey: path.join(pki.dir, 'sa.key') };
}
