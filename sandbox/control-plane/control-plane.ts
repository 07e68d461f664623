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
import {
  AGGREGATOR_CLIENT,
  apiserverFlags,
  apiserverUrl,
  controllerManagerFlags,
  schedulerFlags,
} from './component-flags.js';
import { buildKubeconfig } from './kubeconfig.js';
import { createCa, createServiceAccountKeys, issueCert, type IssuedCert, type Pki } from './pki.js';
import { canConnect, freePort } from './ports.js';
import { onExitCleanup, startProcess, type ManagedProcess } from './processes.js';
import { apiserverProxyEnvironment, type ServiceProxy } from './service-proxy.js';

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
  /**
   * kube-apiserver calls webhook Services through this proxy (its HTTPS_PROXY), which plays the
   * cluster's DNS and kube-proxy (service-proxy.ts). Without it a webhook Service leads nowhere.
   */
  serviceProxy?: ServiceProxy;
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

/** The control plane's certificates and keys, each CA's files in the state directory. */
interface ControlPlaneCerts {
  pki: Pki;
  serving: IssuedCert;
  admin: IssuedCert;
  controllerManager: IssuedCert;
  scheduler: IssuedCert | undefined;
  serviceAccount: { publicKey: string; privateKey: string };
  frontProxyPki: Pki;
  aggregator: IssuedCert;
}

async function issueControlPlaneCerts(
  dir: string,
  name: string,
  scheduler: boolean,
): Promise<ControlPlaneCerts> {
  const pki = await createCa(path.join(dir, 'pki'), `${name}-ca`);
  const serving = await issueCert(pki, 'apiserver', { commonName: 'kube-apiserver' }, 'server');
  const admin = await issueCert(
    pki,
    'admin',
    { commonName: 'sandbox-admin', organization: 'system:masters' },
    'client',
  );
  const controllerManager = await issueCert(
    pki,
    'controller-manager',
    { commonName: 'system:kube-controller-manager', organization: 'system:masters' },
    'client',
  );
  const schedulerCert = scheduler
    ? await issueCert(pki, 'scheduler', { commonName: 'system:kube-scheduler' }, 'client')
    : undefined;
  const serviceAccount = await createServiceAccountKeys(pki);
  // The aggregation layer's own CA and client: the apiserver proxies to aggregated APIs
  // (KubeVirt's subresources.kubevirt.io) with this certificate and the caller in headers.
  const frontProxyPki = await createCa(path.join(dir, 'front-proxy-pki'), `${name}-front-proxy-ca`);
  const aggregator = await issueCert(
    frontProxyPki,
    'front-proxy-client',
    { commonName: AGGREGATOR_CLIENT },
    'client',
  );
  return {
    pki,
    serving,
    admin,
    controllerManager,
    scheduler: schedulerCert,
    serviceAccount,
    frontProxyPki,
    aggregator,
  };
}

/** Where a component runs: the control plane's name, state directory, apiserver and CA. */
interface ComponentContext {
  name: string;
  dir: string;
  server: string;
  pki: Pki;
}

/** Writes the component's kubeconfig and starts it with the flags made from that kubeconfig's path. */
async function startComponent(
  ctx: ComponentContext,
  component: 'kube-controller-manager' | 'kube-scheduler',
  binary: string,
  cert: IssuedCert,
  flags: (kubeconfig: string) => string[],
): Promise<ManagedProcess> {
  const kubeconfigName = component === 'kube-scheduler' ? 'scheduler' : 'controller-manager';
  const kubeconfig = path.join(ctx.dir, `${kubeconfigName}.kubeconfig`);
  await fsp.writeFile(kubeconfig, kubeconfigFor(ctx.name, ctx.server, ctx.pki, cert), { mode: 0o600 });
  return startProcess(component, binary, flags(kubeconfig), path.join(ctx.dir, `${component}.log`));
}

/**
 * Starts and stops kube-apiserver, keeping the running one in the control plane's processes so
 * that stopping the control plane stops it too.
 */
function apiserverLifecycle(
  apiserver: {
    binary: string;
    args: string[];
    env: NodeJS.ProcessEnv;
    dir: string;
    admin: KubeClient;
    readyTimeoutMs: number;
  },
  processes: ManagedProcess[],
): { startApiserver: () => Promise<void>; stopApiserver: () => Promise<void> } {
  let running: ManagedProcess | undefined;
  return {
    startApiserver: async () => {
      running = startProcess(
        'kube-apiserver',
        apiserver.binary,
        apiserver.args,
        path.join(apiserver.dir, 'kube-apiserver.log'),
        apiserver.env,
      );
      processes.push(running);
      await waitReady(apiserver.admin, running, apiserver.readyTimeoutMs);
    },
    stopApiserver: async () => {
      if (!running) return;
      const p = running;
      running = undefined;
      processes.splice(processes.indexOf(p), 1);
      await p.stop();
    },
  };
}

/** Starts a control plane in a fresh temp directory; everything it starts stops with stop(). */
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
    const certs = await issueControlPlaneCerts(dir, name, options.scheduler === true);
    const { pki } = certs;
    const etcd = await startEtcd(bins, dir, readyTimeoutMs);
    processes.push(etcd.process);

    const apiPort = options.apiserverPort ?? (await freePort());
    const bindAddress = options.bindAddress ?? '127.0.0.1';
    const server = apiserverUrl(bindAddress, apiPort);
    const adminKubeconfig = kubeconfigFor(name, server, pki, certs.admin);
    const admin = KubeClient.fromKubeconfig(adminKubeconfig, {
      requestTimeoutMs: 10_000,
      retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
    });
    const args = apiserverFlags({
      ...{ name, dir, server, bindAddress, port: apiPort, etcdUrl: etcd.url },
      ...{ servingCert: certs.serving, clientCaFile: pki.caCert, serviceAccount: certs.serviceAccount },
      ...{ requestheaderCaFile: certs.frontProxyPki.caCert, aggregatorCert: certs.aggregator },
    });
    const env = apiserverProxyEnvironment(process.env, options.serviceProxy);
    const { startApiserver, stopApiserver } = apiserverLifecycle(
      { binary: bins.kubeApiserver, args, env, dir, admin, readyTimeoutMs },
      processes,
    );
    await startApiserver();
    await options.beforeControllerManager?.(admin, pki);

    const component: ComponentContext = { name, dir, server, pki };
    if (options.controllerManager !== false) {
      processes.push(
        await startComponent(
          component,
          'kube-controller-manager',
          bins.kubeControllerManager,
          certs.controllerManager,
          controllerManagerFlags,
        ),
      );
    }
    if (certs.scheduler) {
      // system:kube-scheduler has its rights from the apiserver's bootstrap RBAC policy.
      processes.push(
        await startComponent(
          component,
          'kube-scheduler',
          bins.kubeScheduler,
          certs.scheduler,
          schedulerFlags,
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
