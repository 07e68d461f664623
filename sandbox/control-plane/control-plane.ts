// A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver (RBAC and
// bootstrap-token authentication on) and kube-controller-manager (garbage collector,
// namespace and PVC-protection controllers), in a fresh temp directory, on free ports.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { KubeClient } from '../../src/kube/client.js';
import { ensureControlPlaneBinaries, type ControlPlaneBinaries } from './binaries.js';
import { buildKubeconfig } from './kubeconfig.js';
import { createCa, createServiceAccountKeys, issueCert, type IssuedCert, type Pki } from './pki.js';
import { canConnect, freePort } from './ports.js';
import { onExitCleanup, startProcess, type ManagedProcess } from './processes.js';

export class ControlPlaneError extends Error {}

export interface ControlPlaneOptions {
  /** Names the temp directory and the kubeconfig context ("harvester", "rancher"). */
  name?: string;
  /** Deadline for each component to become ready. */
  readyTimeoutMs?: number;
  controllerManager?: boolean;
  /** Fixed apiserver port (default: a free one). */
  apiserverPort?: number;
  /** The apiserver's loopback address: 127.0.0.1 (default) or ::1 (its URL is then https://[::1]:port). */
  bindAddress?: '127.0.0.1' | '::1';
  /**
   * Runs once the apiserver is ready and before kube-controller-manager starts. Install
   * CRDs here: the garbage collector learns new kinds only on its 30 s discovery pass, so
   * a Foreground deletion of a kind installed later stalls until then.
   */
  beforeControllerManager?: (admin: KubeClient, pki: Pki) => Promise<void>;
}

export interface ControlPlane {
  readonly name: string;
  readonly dir: string;
  /** https://127.0.0.1:<port> (or https://[::1]:<port>) */
  readonly server: string;
  readonly caPem: string;
  readonly pki: Pki;
  /** Its etcd's client URL (a guest cluster's apiserver can keep its objects there: guest-apiserver.ts). */
  readonly etcdUrl: string;
  /** Admin (system:masters) kubeconfig, as YAML text. */
  readonly adminKubeconfig: string;
  /** A client for the admin kubeconfig, closed by stop(). */
  readonly admin: KubeClient;
  stopApiserver(): Promise<void>;
  startApiserver(): Promise<void>;
  restartApiserver(): Promise<void>;
  stop(): Promise<void>;
}

const CONTROLLERS =
  'garbage-collector-controller,namespace-controller,persistentvolumeclaim-protection-controller';

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const name = options.name ?? 'sandbox';
  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  const bins = ensureControlPlaneBinaries();
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `hm-${name}-`));
  await fsp.chmod(dir, 0o700);
  const processes: ManagedProcess[] = [];
  const forgetCleanup = onExitCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const cleanup = async (): Promise<void> => {
    for (const p of processes.reverse()) await p.stop();
    processes.length = 0;
    await fsp.rm(dir, { recursive: true, force: true });
    forgetCleanup();
  };

  try {
    const pki = await createCa(path.join(dir, 'pki'), `${name}-ca`);
    const serving = await issueCert(pki, 'apiserver', { commonName: 'kube-apiserver' }, 'server');
    const adminCert = await issueCert(
      pki,
      'admin',
      { commonName: 'sandbox-admin', organization: 'system:masters' },
      'client',
    );
    const kcmCert = await issueCert(
      pki,
      'controller-manager',
      { commonName: 'system:kube-controller-manager', organization: 'system:masters' },
      'client',
    );
    const sa = await createServiceAccountKeys(pki);

    const etcd = await startEtcd(bins, dir, readyTimeoutMs);
    processes.push(etcd.process);

    const apiPort = options.apiserverPort ?? (await freePort());
    const bindAddress = options.bindAddress ?? '127.0.0.1';
    const server = bindAddress === '::1' ? `https://[::1]:${apiPort}` : `https://127.0.0.1:${apiPort}`;
    const adminKubeconfig = buildKubeconfig({
      name,
      server,
      caPem: pki.caPem,
      user: { clientCertPem: adminCert.certPem, clientKeyPem: adminCert.keyPem },
    });
    const admin = KubeClient.fromKubeconfig(adminKubeconfig, {
      requestTimeoutMs: 10_000,
      retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
    });
    const apiserverArgs = [
      '--advertise-address=127.0.0.1',
      `--bind-address=${bindAddress}`,
      `--secure-port=${apiPort}`,
      `--etcd-servers=${etcd.url}`,
      `--etcd-prefix=/${name}`,
      `--cert-dir=${path.join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${serving.certPath}`,
      `--tls-private-key-file=${serving.keyPath}`,
      `--client-ca-file=${pki.caCert}`,
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${sa.publicKey}`,
      `--service-account-signing-key-file=${sa.privateKey}`,
      '--authorization-mode=RBAC',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      '--disable-admission-plugins=ServiceAccount',
      '--enable-bootstrap-token-auth=true',
      '--enable-priority-and-fairness=false',
      '--profiling=false',
      '--v=1',
    ];
    let apiserver: ManagedProcess | undefined;
    const startApiserver = async (): Promise<void> => {
      apiserver = startProcess(
        'kube-apiserver',
        bins.kubeApiserver,
        apiserverArgs,
        path.join(dir, 'kube-apiserver.log'),
      );
      processes.push(apiserver);
      await waitReady(admin, apiserver, readyTimeoutMs);
    };
    const stopApiserver = async (): Promise<void> => {
      if (!apiserver) return;
      const p = apiserver;
      apiserver = undefined;
      processes.splice(processes.indexOf(p), 1);
      await p.stop();
    };
    await startApiserver();
    await options.beforeControllerManager?.(admin, pki);

    if (options.controllerManager !== false) {
      const kcmKubeconfig = path.join(dir, 'controller-manager.kubeconfig');
      await fsp.writeFile(kcmKubeconfig, kubeconfigFor(name, server, pki, kcmCert), { mode: 0o600 });
      processes.push(
        startProcess(
          'kube-controller-manager',
          bins.kubeControllerManager,
          [
            `--kubeconfig=${kcmKubeconfig}`,
            `--controllers=${CONTROLLERS}`,
            '--leader-elect=false',
            '--secure-port=0',
            '--concurrent-gc-syncs=5',
            '--v=1',
          ],
          path.join(dir, 'kube-controller-manager.log'),
        ),
      );
    }

    return {
      name,
      dir,
      server,
      caPem: pki.caPem,
      pki,
      etcdUrl: etcd.url,
      adminKubeconfig,
      admin,
      startApiserver,
      stopApiserver,
      restartApiserver: async () => {
        await stopApiserver();
        await startApiserver();
      },
      stop: async () => {
        admin.close();
        await cleanup();
      },
    };
  } catch (err) {
    await cleanup();
    throw err instanceof ControlPlaneError
      ? err
      : new ControlPlaneError(err instanceof Error ? err.message : String(err));
  }
}

function kubeconfigFor(name: string, server: string, pki: Pki, cert: IssuedCert): string {
  return buildKubeconfig({
    name,
    server,
    caPem: pki.caPem,
    user: { clientCertPem: cert.certPem, clientKeyPem: cert.keyPem },
  });
}

async function startEtcd(
  bins: ControlPlaneBinaries,
  dir: string,
  readyTimeoutMs: number,
): Promise<{ process: ManagedProcess; url: string }> {
  const clientPort = await freePort();
  const peerPort = await freePort();
  const url = `http://127.0.0.1:${clientPort}`;
  const proc = startProcess(
    'etcd',
    bins.etcd,
    [
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      '--log-level=warn',
      '--logger=zap',
    ],
    path.join(dir, 'etcd.log'),
  );
  const deadline = Date.now() + readyTimeoutMs;
  while (!(await canConnect(clientPort))) {
    await failIfExited(proc, 'start etcd');
    if (Date.now() > deadline) {
      await proc.stop();
      throw new ControlPlaneError(
        `step 'start etcd': not listening on ${url} within ${readyTimeoutMs} ms; log ${proc.logPath}:\n${proc.tail()}`,
      );
    }
    await sleep(50);
  }
  return { process: proc, url };
}

export async function failIfExited(proc: ManagedProcess, step: string): Promise<void> {
  const exited = await Promise.race([proc.exited, sleep(0).then(() => undefined)]);
  if (exited === undefined) return;
  const tail = proc.tail();
  const hint = /address already in use/.test(tail) ? ' (a port is in use: stop what holds it, or retry)' : '';
  throw new ControlPlaneError(
    `step '${step}': ${proc.name} exited (${exited})${hint}; log ${proc.logPath}:\n${tail}`,
  );
}

/** Startup has no object to watch, so readiness is a short poll of /readyz. */
export async function waitReady(admin: KubeClient, proc: ManagedProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string;
  for (;;) {
    await failIfExited(proc, 'start kube-apiserver');
    try {
      await admin.transport.send({
        method: 'GET',
        path: '/readyz',
        operation: 'get /readyz',
        timeoutMs: 2_000,
      });
      return;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      await proc.stop();
      throw new ControlPlaneError(
        `step 'wait for kube-apiserver /readyz': not ready within ${timeoutMs} ms (last: ${last}); log ${proc.logPath}:\n${proc.tail()}`,
      );
    }
    await sleep(100);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
