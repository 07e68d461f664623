// A real container registry for the release tests: Debian's docker-registry (the CNCF
// distribution registry 2.8, installed by scripts/setup-release-tools.sh) on 127.0.0.1 with
// TLS, its certificate from a CA made here. `certDir` holds that CA as ca.crt, the layout
// skopeo's --dest-cert-dir and podman's --cert-dir read, so both trust it without touching
// the machine's trust store.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'node:https';
import { createCa, issueCert } from '../control-plane/pki.js';
import { freePort } from '../control-plane/ports.js';

export const REGISTRY_BINARY = '/usr/bin/docker-registry';

export interface Registry {
  /** host:port, as image references name it. */
  host: string;
  /** A directory holding the CA as ca.crt (skopeo --dest-cert-dir, podman --cert-dir). */
  certDir: string;
  stop(): Promise<void>;
}

/** Whether the registry can run here (the Debian package is installed). */
export function registryAvailable(): boolean {
  return fs.existsSync(REGISTRY_BINARY);
}

function ready(host: string, caPem: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: Number(host.split(':')[1]),
        path: '/v2/',
        agent: new Agent({ ca: caPem }),
        timeout: 2000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** Starts a registry storing under `dir` (made by the caller, removed with it). */
export async function startRegistry(dir: string, timeoutMs = 30_000): Promise<Registry> {
  const pki = await createCa(path.join(dir, 'pki'), 'harvester-machine-test-registry-ca');
  const serving = await issueCert(pki, 'registry', { commonName: '127.0.0.1' }, 'server');
  const certDir = path.join(dir, 'certs');
  fs.mkdirSync(certDir, { recursive: true });
  fs.copyFileSync(pki.caCert, path.join(certDir, 'ca.crt'));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const config = path.join(dir, 'config.yml');
  fs.writeFileSync(
    config,
    [
      'version: 0.1',
      'log: { level: warn, accesslog: { disabled: true } }',
      `storage: { filesystem: { rootdirectory: ${JSON.stringify(path.join(dir, 'storage'))} }, delete: { enabled: true } }`,
      `http: { addr: ${JSON.stringify(host)}, tls: { certificate: ${JSON.stringify(serving.certPath)}, key: ${JSON.stringify(serving.keyPath)} } }`,
      '',
    ].join('\n'),
  );
  const log = fs.openSync(path.join(dir, 'registry.log'), 'a');
  const child = spawn(REGISTRY_BINARY, ['serve', config], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const stop = async (): Promise<void> => {
    if (exited !== undefined) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([gone, sleep(5_000).then(() => child.kill('SIGKILL'))]);
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await ready(host, pki.caPem))) {
    const tail = () => fs.readFileSync(path.join(dir, 'registry.log'), 'utf8').slice(-2000);
    if (exited !== undefined) throw new Error(`the registry exited (${exited}): ${tail()}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the registry did not answer on ${host} within ${timeoutMs} ms: ${tail()}`);
    }
    await sleep(200);
  }
  return { host, certDir, stop };
}
