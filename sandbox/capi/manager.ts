// Cluster API's real core controller-manager against a sandbox control plane (Rancher's local
// cluster): built once per version (build-cluster-api.sh), its CRDs installed from the module
// before kube-controller-manager starts (so the garbage collector knows them at once), then
// the manager started with only what the deletion path needs, and its webhooks registered.
//
// Flags (read in main.go and util/flags of v1.10.6 and v1.13.6):
// - Rancher's chart's feature gates: MachinePool, ClusterResourceSet, ClusterTopology and
//   RuntimeSDK off (v1.13 has no ClusterResourceSet gate: GA, always on), so besides the
//   Cluster, MachineDeployment, MachineSet and Machine controllers only MachineHealthCheck,
//   the CRD migrator (and on v1.13 ClusterResourceSet) run, idle: the manager has no flag to
//   drop them;
// - every controller's concurrency and the client's rate limit as Rancher's chart leaves them
//   (the manager's defaults: 10 workers per controller, 20 requests/s with bursts of 30), no
//   leader election (one replica), diagnostics off, health probes on 127.0.0.1;
// - its webhook server (always started: main.go registers every webhook unconditionally) on a
//   free port with a serving certificate from the control plane's CA. controller-runtime's
//   webhook server has a Host option but the manager exposes no flag for it, so it listens on
//   every interface; it serves TLS only, Cluster API's webhooks only, for the test's lifetime.
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { KubeClient } from '../../src/kube/client.js';
import type { ControlPlane } from '../control-plane/control-plane.js';
import { buildKubeconfig } from '../control-plane/kubeconfig.js';
import { issueCert, type Pki } from '../control-plane/pki.js';
import { freePort } from '../control-plane/ports.js';
import { startProcess, type ManagedProcess } from '../control-plane/processes.js';
import { ensureClusterApi, type ClusterApiBuild } from './binaries.js';
import {
  installClusterApiCrds,
  installClusterApiWebhooks,
  uninstallClusterApiWebhooks,
  type WebhookEndpoint,
} from './install.js';
import { clusterApiVersion, type ClusterApiVersion } from './versions.js';

export class ClusterApiError extends Error {}

export interface ClusterApiOptions {
  /** Default: clusterApiVersion() (v1.10.6, or HARVESTER_MACHINE_CAPI_VERSION). */
  version?: ClusterApiVersion;
  /** Only this namespace is watched (default: all). */
  namespace?: string;
  readyTimeoutMs?: number;
  /**
   * Every controller's concurrency. Default 'rancher': no flag, the manager's own defaults (10
   * workers per controller), as Rancher's rancher-provisioning-capi chart runs it.
   */
  concurrency?: number | 'rancher';
  /** The manager's client rate limit (--kube-api-qps, burst 1.5 times it); default its own (20, burst 30), as Rancher's. */
  clientQps?: number;
}

const concurrencyFlags = (n: number | 'rancher'): string[] =>
  n === 'rancher'
    ? []
    : [
        'cluster',
        'machine',
        'machineset',
        'machinedeployment',
        'machinehealthcheck',
        'clusterresourceset',
        'clustercache',
      ].map((c) => `--${c}-concurrency=${n}`);

/**
 * One Cluster API installation: `prepare()` builds (or finds) the version and picks the webhook
 * port; `installCrds` runs in the control plane's beforeControllerManager; `start` runs the
 * manager. `stop` ends it (the webhooks are deregistered first, so the apiserver does not
 * call a server that is gone); `start` may be called again after `stop`.
 */
export class ClusterApi {
  private process: ManagedProcess | undefined;
  private dir: string | undefined;

  private constructor(
    readonly version: ClusterApiVersion,
    readonly build: ClusterApiBuild,
    readonly webhookPort: number,
    private readonly options: ClusterApiOptions,
  ) {}

  static async prepare(options: ClusterApiOptions = {}): Promise<ClusterApi> {
    const version = options.version ?? clusterApiVersion();
    const build = ensureClusterApi(version.version);
    return new ClusterApi(version, build, await freePort(), options);
  }

  endpoint(pki: Pki): WebhookEndpoint {
    return { url: `https://127.0.0.1:${this.webhookPort}`, caPem: pki.caPem };
  }

  /** For ControlPlaneOptions.beforeControllerManager. */
  async installCrds(admin: KubeClient, pki: Pki): Promise<string[]> {
    return installClusterApiCrds(admin, this.build.crdDir, this.endpoint(pki));
  }

  get logPath(): string | undefined {
    return this.process?.logPath;
  }

  get pid(): number | undefined {
    return this.process?.child.pid;
  }

  async start(cp: ControlPlane): Promise<void> {
    if (this.process) return;
    const dir = (this.dir ??= await fsp.mkdtemp(path.join(cp.dir, 'cluster-api-')));
    const certDir = path.join(dir, 'webhook-certs');
    await fsp.mkdir(certDir, { recursive: true, mode: 0o700 });
    const serving = await issueCert(cp.pki, 'capi-webhook', { commonName: 'capi-webhook-service' }, 'server');
    await fsp.copyFile(serving.certPath, path.join(certDir, 'tls.crt'));
    await fsp.copyFile(serving.keyPath, path.join(certDir, 'tls.key'));
    await fsp.chmod(path.join(certDir, 'tls.key'), 0o600);
    const client = await issueCert(
      cp.pki,
      'capi-manager',
      { commonName: 'capi-manager', organization: 'system:masters' },
      'client',
    );
    const kubeconfig = path.join(dir, 'kubeconfig');
    await fsp.writeFile(
      kubeconfig,
      buildKubeconfig({
        name: cp.name,
        server: cp.server,
        caPem: cp.caPem,
        user: { clientCertPem: client.certPem, clientKeyPem: client.keyPem },
      }),
      { mode: 0o600 },
    );
    const healthPort = await freePort();
    const proc = startProcess(
      'cluster-api-manager',
      this.build.manager,
      [
        `--kubeconfig=${kubeconfig}`,
        '--leader-elect=false',
        ...(this.options.namespace ? [`--namespace=${this.options.namespace}`] : []),
        `--health-addr=127.0.0.1:${healthPort}`,
        '--diagnostics-address=0',
        `--webhook-port=${this.webhookPort}`,
        `--webhook-cert-dir=${certDir}`,
        `--feature-gates=${this.version.featureGates}`,
        ...concurrencyFlags(this.options.concurrency ?? 'rancher'),
        ...(this.options.clientQps
          ? [
              `--kube-api-qps=${this.options.clientQps}`,
              `--kube-api-burst=${Math.ceil(this.options.clientQps * 1.5)}`,
            ]
          : []),
      ],
      path.join(dir, 'manager.log'),
    );
    this.process = proc;
    try {
      // As long as Harvester's own components get: a suite of three sandboxes starting at once on
      // two cores once took more than 60 s.
      await waitHealthy(proc, healthPort, this.options.readyTimeoutMs ?? 120_000);
      await installClusterApiWebhooks(cp.admin, this.build.webhookManifest, this.endpoint(cp.pki));
    } catch (err) {
      await this.stop(cp.admin);
      throw err;
    }
  }

  /** Stops the manager (SIGTERM, then SIGKILL), its webhooks deregistered first. */
  async stop(admin?: KubeClient): Promise<void> {
    const proc = this.process;
    this.process = undefined;
    if (!proc) return;
    if (admin) await uninstallClusterApiWebhooks(admin, this.build.webhookManifest).catch(() => undefined);
    await proc.stop(5_000);
  }

  /** The manager's last log lines, for error messages. */
  tail(lines = 20): string {
    return this.process?.tail(lines) ?? '(not running)';
  }
}

/** The manager's /readyz (webhook server started, caches running); a short poll: no object to watch. */
async function waitHealthy(proc: ManagedProcess, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | string | undefined;
  void proc.exited.then((e) => (exited = e));
  // What /readyz said last: which check failed, or why it did not answer.
  let lastAnswer: string;
  for (;;) {
    if (exited !== undefined)
      throw new ClusterApiError(
        `step 'start the Cluster API manager': it exited (${exited}); log ${proc.logPath}:\n${proc.tail(15)}`,
      );
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz?verbose`, {
        signal: AbortSignal.timeout(2_000),
      });
      if (res.ok) return;
      lastAnswer = `HTTP ${res.status}: ${(await res.text()).slice(0, 500).trim()}`;
    } catch (err) {
      lastAnswer = `no answer (${err instanceof Error ? err.message : String(err)})`; // not listening yet
    }
    if (Date.now() > deadline)
      throw new ClusterApiError(
        `step 'start the Cluster API manager': not ready within ${timeoutMs} ms (its /readyz: ${lastAnswer}); log ${proc.logPath}:\n${proc.tail(15)}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** For logs and reports: "Cluster API v1.10.6 (v1beta1 stored)". */
export function describeClusterApi(capi: ClusterApi): string {
  return `Cluster API ${capi.version.version} (${capi.version.storage} stored)`;
}
