// A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver (RBAC, bootstrap-token
// authentication and the aggregation layer on), kube-controller-manager (garbage collector,
// namespace, service account, PV binding and PVC/PV-protection controllers) and, on request, kube-scheduler, in a
// fresh temp directory, on free ports.
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
  /** Runs kube-scheduler too (default: no; nothing schedules pods then). */
  scheduler?: boolean;
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

/** The common name kube-apiserver's aggregator presents to aggregated API servers. */
const AGGREGATOR_CLIENT = 'front-proxy-client';

const CONTROLLERS = [
  'garbage-collector-controller',
  'namespace-controller',
  'persistentvolumeclaim-protection-controller',
  // Binds claims to the volumes a provisioner makes (Longhorn's stand-in plays the provisioner).
  'persistentvolume-binder-controller',
  'persistentvolume-protection-controller',
  // Every namespace's `default` ServiceAccount, which the ServiceAccount admission plugin needs to
  // admit a pod (and then mounts its token: KubeVirt counts that volume on attachment pods).
  'serviceaccount-controller',
].join(',');

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
    const schedulerCert = options.scheduler
      ? await issueCert(pki, 'scheduler', { commonName: 'system:kube-scheduler' }, 'client')
      : undefined;
    const sa = await createServiceAccountKeys(pki);
    // The aggregation layer's own CA and client: the apiserver proxies to aggregated APIs
    // (KubeVirt's subresources.kubevirt.io) with this certificate and the caller in headers.
    const frontProxyPki = await createCa(path.join(dir, 'front-proxy-pki'), `${name}-front-proxy-ca`);
    const aggregatorCert = await issueCert(
      frontProxyPki,
      'front-proxy-client',
      { commonName: AGGREGATOR_CLIENT },
      'client',
    );

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
      '--enable-bootstrap-token-auth=true',
      `--requestheader-client-ca-file=${frontProxyPki.caCert}`,
      `--requestheader-allowed-names=${AGGREGATOR_CLIENT}`,
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${aggregatorCert.certPath}`,
      `--proxy-client-key-file=${aggregatorCert.keyPath}`,
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
            // Each controller acts as its own service account (kube-system/<controller>, tokens
            // from the TokenRequest API), as RKE2 runs it under Harvester: the garbage collector's
            // deletes then come from system:serviceaccount:kube-system:generic-garbage-collector,
            // the user Harvester's PVC webhook lets pass.
            '--use-service-account-credentials=true',
            '--v=1',
          ],
          path.join(dir, 'kube-controller-manager.log'),
        ),
      );
    }
    if (schedulerCert) {
      // system:kube-scheduler has its rights from the apiserver's bootstrap RBAC policy.
      const schedulerKubeconfig = path.join(dir, 'scheduler.kubeconfig');
      await fsp.writeFile(schedulerKubeconfig, kubeconfigFor(name, server, pki, schedulerCert), {
        mode: 0o600,
      });
      processes.push(
        startProcess(
          'kube-scheduler',
          bins.kubeScheduler,
          [
            `--kubeconfig=${schedulerKubeconfig}`,
            `--authentication-kubeconfig=${schedulerKubeconfig}`,
            `--authorization-kubeconfig=${schedulerKubeconfig}`,
            '--leader-elect=false',
            '--secure-port=0',
            '--v=1',
          ],
          path.join(dir, 'kube-scheduler.log'),
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
