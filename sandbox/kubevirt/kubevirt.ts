// KubeVirt's own virt-api and virt-controller against a sandbox control plane (Harvester's):
// built once (build-kubevirt.sh), its CRDs installed before kube-controller-manager starts,
// then both started as virt-operator would run them, each with its service account's identity
// and RBAC, and virt-api's webhooks and APIServices registered once it serves.
//
// As virt-operator deploys them (pkg/virt-operator/resource/generate/components/deployments.go):
// - virt-api `--subresources-only`, TLS with a serving certificate for virt-api.<ns>.svc (the
//   name the aggregator checks) from the control plane's CA, the client certificate it presents
//   to virt-handler, the console server port; here on 127.0.0.1 only;
// - virt-controller with the launcher and exporter images, its metrics/health server (TLS) on
//   127.0.0.1, leader election on (one replica: it leads at once).
// Each authenticates with a client certificate naming its service account
// (system:serviceaccount:kubevirt:<name>, groups system:serviceaccounts[:kubevirt]): RBAC binds
// service-account subjects by that user name, and virt-api's webhooks tell KubeVirt's own
// components by it.
import fsp from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { KubeClient } from '../../src/kube/client.js';
import type { ControlPlane } from '../control-plane/control-plane.js';
import { buildKubeconfig } from '../control-plane/kubeconfig.js';
import { issueCert, type IssuedCert } from '../control-plane/pki.js';
import { freePort } from '../control-plane/ports.js';
import { startProcess, supervise, type ManagedProcess } from '../control-plane/processes.js';
import { ensureKubeVirt, type KubeVirtBuild } from './binaries.js';
import { deregisterVirtApi, installKubeVirt, installKubeVirtCrds, registerVirtApi } from './install.js';
import { loadManifests, type KubeVirtManifests } from './manifests.js';
import { EXPORTER_IMAGE, KUBEVIRT_NAMESPACE, KUBEVIRT_VERSION, LAUNCHER_IMAGE } from './version.js';

export class KubeVirtError extends Error {}

export interface KubeVirtOptions {
  readyTimeoutMs?: number;
}

const serviceAccount = (name: string) => ({
  commonName: `system:serviceaccount:${KUBEVIRT_NAMESPACE}:${name}`,
  organization: ['system:serviceaccounts', `system:serviceaccounts:${KUBEVIRT_NAMESPACE}`],
});

/**
 * One KubeVirt installation: `prepare()` builds (or finds) it and picks its ports;
 * `installCrds` runs in the control plane's beforeControllerManager; `start` installs the rest
 * and runs both components; `stop` ends them (webhooks and APIServices deregistered first).
 */
export class KubeVirt {
  private processes: ManagedProcess[] = [];
  private dir: string | undefined;
  private clients: KubeClient[] = [];

  private constructor(
    readonly build: KubeVirtBuild,
    readonly manifests: KubeVirtManifests,
    readonly virtApiPort: number,
    private readonly options: KubeVirtOptions,
  ) {}

  static async prepare(options: KubeVirtOptions = {}): Promise<KubeVirt> {
    const build = ensureKubeVirt();
    return new KubeVirt(build, await loadManifests(build.manifests), await freePort(), options);
  }

  get version(): string {
    return KUBEVIRT_VERSION;
  }

  /** For ControlPlaneOptions.beforeControllerManager. */
  installCrds(admin: KubeClient): Promise<string[]> {
    return installKubeVirtCrds(admin, this.manifests);
  }

  /** Log files of the running components, for error messages and debugging. */
  get logPaths(): string[] {
    return this.processes.map((p) => p.logPath);
  }

  async start(cp: ControlPlane): Promise<void> {
    if (this.processes.length > 0) return;
    const dir = (this.dir ??= await fsp.mkdtemp(path.join(cp.dir, 'kubevirt-')));
    const readyTimeoutMs = this.options.readyTimeoutMs ?? 90_000;
    await installKubeVirt(cp.admin, this.manifests, cp.caPem);

    const kubeconfigFor = async (name: string, cert: IssuedCert): Promise<string> => {
      const file = path.join(dir, `${name}.kubeconfig`);
      await fsp.writeFile(
        file,
        buildKubeconfig({
          name: cp.name,
          server: cp.server,
          caPem: cp.caPem,
          user: { clientCertPem: cert.certPem, clientKeyPem: cert.keyPem },
        }),
        { mode: 0o600 },
      );
      return file;
    };
    // One at a time: openssl keeps the CA's serial number in one file.
    const apiIdentity = await issueCert(
      cp.pki,
      'kubevirt-apiserver',
      serviceAccount('kubevirt-apiserver'),
      'client',
    );
    const apiServing = await issueCert(cp.pki, 'virt-api', { commonName: 'virt-api' }, 'server', {
      dnsNames: [`virt-api.${KUBEVIRT_NAMESPACE}.svc`],
    });
    const handlerClient = await issueCert(
      cp.pki,
      'virt-api-handler-client',
      { commonName: 'kubevirt.io:system:client:virt-handler' },
      'client',
    );
    const controllerIdentity = await issueCert(
      cp.pki,
      'kubevirt-controller',
      serviceAccount('kubevirt-controller'),
      'client',
    );
    const controllerServing = await issueCert(
      cp.pki,
      'virt-controller',
      { commonName: 'virt-controller' },
      'server',
    );
    const consolePort = await freePort();
    const controllerPort = await freePort();

    const virtApi = startProcess(
      'virt-api',
      this.build.virtApi,
      [
        `--kubeconfig=${await kubeconfigFor('virt-api', apiIdentity)}`,
        '--listen=127.0.0.1',
        `--port=${this.virtApiPort}`,
        `--console-server-port=${consolePort}`,
        '--subresources-only',
        `--tls-cert-file=${apiServing.certPath}`,
        `--tls-key-file=${apiServing.keyPath}`,
        `--handler-cert-file=${handlerClient.certPath}`,
        `--handler-key-file=${handlerClient.keyPath}`,
      ],
      path.join(dir, 'virt-api.log'),
    );
    this.processes.push(virtApi);
    const controllerKubeconfig = await kubeconfigFor('virt-controller', controllerIdentity);
    // Exits when it loses its leader lease (an apiserver restart): started again, as kubelet would.
    const virtController = supervise(() =>
      startProcess(
        'virt-controller',
        this.build.virtController,
        [
          `--kubeconfig=${controllerKubeconfig}`,
          '--listen=127.0.0.1',
          `--port=${controllerPort}`,
          `--launcher-image=${LAUNCHER_IMAGE}`,
          `--exporter-image=${EXPORTER_IMAGE}`,
          `--prom-cert-file=${controllerServing.certPath}`,
          `--prom-key-file=${controllerServing.keyPath}`,
        ],
        path.join(dir, 'virt-controller.log'),
      ),
    );
    this.processes.push(virtController);
    try {
      await waitHealthy(
        virtApi,
        this.virtApiPort,
        '/apis/subresources.kubevirt.io/v1/healthz',
        cp.caPem,
        readyTimeoutMs,
      );
      await registerVirtApi(cp.admin, this.manifests, { port: this.virtApiPort, caPem: cp.caPem });
      await waitHealthy(virtController, controllerPort, '/leader', cp.caPem, readyTimeoutMs);
    } catch (err) {
      await this.stop(cp.admin);
      throw err;
    }
  }

  /**
   * A client acting as virt-handler's service account, for the node stand-in (its writes are
   * what virt-api's webhooks and RBAC see from virt-handler). Closed by stop().
   */
  async virtHandlerClient(cp: ControlPlane): Promise<KubeClient> {
    const cert = await issueCert(
      cp.pki,
      `kubevirt-handler-${this.clients.length}`,
      serviceAccount('kubevirt-handler'),
      'client',
    );
    const client = KubeClient.fromKubeconfig(
      buildKubeconfig({
        name: cp.name,
        server: cp.server,
        caPem: cp.caPem,
        user: { clientCertPem: cert.certPem, clientKeyPem: cert.keyPem },
      }),
      { requestTimeoutMs: 10_000 },
    );
    this.clients.push(client);
    return client;
  }

  /** Stops both components (SIGKILL: nothing of theirs outlives the sandbox), webhooks deregistered first. */
  async stop(admin?: KubeClient): Promise<void> {
    for (const client of this.clients.splice(0)) client.close();
    const processes = this.processes.splice(0);
    if (processes.length === 0) return;
    if (admin) await deregisterVirtApi(admin, this.manifests);
    await Promise.all(processes.map((p) => p.stop(0)));
  }

  /** The components' last log lines, for error messages. */
  tail(lines = 10): string {
    return this.processes.map((p) => `${p.name}:\n${p.tail(lines)}`).join('\n') || '(not running)';
  }
}

/** Startup has no object to watch: a short poll of the component's own health endpoint (TLS). */
async function waitHealthy(
  proc: ManagedProcess,
  port: number,
  probe: string,
  caPem: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | string | undefined;
  void proc.exited.then((e) => (exited = e));
  let last: string;
  for (;;) {
    if (exited !== undefined)
      throw new KubeVirtError(
        `step 'start ${proc.name}': it exited (${exited}); log ${proc.logPath}:\n${proc.tail(15)}`,
      );
    const status = await getStatus(port, probe, caPem).catch((err: Error) => err.message);
    if (status === 200) return;
    last = String(status);
    if (Date.now() > deadline)
      throw new KubeVirtError(
        `step 'start ${proc.name}': ${probe} not ready within ${timeoutMs} ms (last: ${last}); log ${proc.logPath}:\n${proc.tail(15)}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

function getStatus(port: number, probe: string, caPem: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path: probe, ca: caPem, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}
