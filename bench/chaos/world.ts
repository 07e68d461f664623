// What the chaos run keeps across its runs: one sandbox (Harvester and Rancher's local cluster
// as real control planes, the real Cluster API manager, the stand-ins, the front proxy), two
// fault-injecting proxies (one before Rancher's apiserver, one before the front proxy, which
// is where Harvester and Rancher's /k8s/clusters path are reached), Rancher's stand-in whose
// create and rm jobs run our driver in process through the Harvester-side proxy, and two
// controller processes with leader election (chart RBAC) through the Rancher-side proxy,
// restarted when one ends, as a Deployment restarts its pods. Stopped in reverse order.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HarvesterDriver } from '../../src/driver/harvester-driver.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { silentLogger } from '../../src/log/logger.js';
import { CLOUD_CREDENTIAL_NAMESPACE } from '../../src/rancher/cloud-credential.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { createTokenUser, tokenKubeconfig } from '../../sandbox/control-plane/access.js';
import {
  harvesterCloudCredential,
  rancherKubeconfig,
  saveHarvesterCloudCredential,
} from '../../sandbox/rancher/credentials.js';
import { machineStateSecret } from '../../sandbox/rancher/machine-state.js';
import {
  startRancherStandIn,
  type CreateJob,
  type RancherStandIn,
} from '../../sandbox/rancher/rancher-standin.js';
import type { SandboxRancherToken } from '../../sandbox/sandbox.js';
import { startSandbox, type Sandbox } from '../../sandbox/sandbox.js';
import {
  startControllerProcess,
  type ControllerProcess,
} from '../../sandbox/walkthrough/controller-process.js';
import { bindChartRbac } from '../../test/controller/chart-rbac.js';
import { machineFlags } from '../../test/support/machines.js';
import { startChaosProxy, type ChaosProxy, type RequestMeter } from './chaos-proxy.js';

export const NS = 'fleet-chaos';
export const SYSTEM_NS = 'hm-chaos';
export const VM_NS = 'default';
export const LEASE = 'harvester-machine-controller';
const DAY = 86_400_000;

export interface Replica {
  name: string;
  process: ControllerProcess;
}

export class ChaosWorld {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-chaos-'));
  readonly replicas: Replica[] = [];
  /** Controller processes that ended without being asked to (a step-down, a crash), and were restarted. */
  readonly unplannedExits: Array<{ name: string; code: number | string; at: number }> = [];
  private stops: Array<() => Promise<void>> = [];
  private replicaSeq = 0;
  private stopping = false;
  private kubeconfig = '';
  sandbox!: Sandbox;
  rancherSide!: ChaosProxy;
  harvesterSide!: ChaosProxy;
  standIn!: RancherStandIn;

  constructor(
    readonly meter: RequestMeter,
    readonly gateDeadline: string,
  ) {}

  get rancher(): KubeClient {
    return this.sandbox.rancher.admin;
  }
  get harvester(): KubeClient {
    return this.sandbox.harvester.admin;
  }

  async start(): Promise<void> {
    this.sandbox = await startSandbox({
      clusterApi: { namespace: NS },
      standIns: { delays: { guestAgentMs: 100, shutdownMs: 50 } },
    });
    this.stops.push(() => this.sandbox.stop());
    const { rancher, harvester, proxy } = this.sandbox;
    for (const name of [NS, SYSTEM_NS])
      await rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      });
    this.rancherSide = await startChaosProxy({
      name: 'rancher',
      issuer: rancher,
      upstream: { origin: rancher.server, caPem: rancher.caPem },
      meter: this.meter,
    });
    this.stops.push(() => this.rancherSide.stop());
    this.harvesterSide = await startChaosProxy({
      name: 'harvester',
      issuer: harvester,
      upstream: { origin: proxy.url, caPem: proxy.caPem },
      meter: this.meter,
    });
    this.stops.push(() => this.harvesterSide.stop());

    const store = path.join(this.dir, 'store');
    this.standIn = await startRancherStandIn(rancher.admin, {
      namespace: NS,
      createJob: this.driverCreateJob(store),
      // Rancher's rm Job has backoffLimit 3 and 10 s, 20 s, 40 s between runs: about as long.
      backoffLimit: 8,
      retryDelayMs: 3_000,
    });
    this.stops.push(() => this.standIn.stop());

    const user = await createTokenUser(rancher.admin, { expiresAt: new Date(Date.now() + DAY) });
    await bindChartRbac(rancher.admin, user.username, {
      watchNamespaces: [NS],
      credentialNamespace: CLOUD_CREDENTIAL_NAMESPACE,
      systemNamespace: SYSTEM_NS,
    });
    this.kubeconfig = tokenKubeconfig({
      name: 'rancher',
      server: this.rancherSide.url,
      caPem: rancher.caPem,
      token: user.token,
    });
    this.stops.push(async () => {
      this.stopping = true;
      await Promise.all(this.replicas.splice(0).map((r) => r.process.stop().catch(() => undefined)));
    });
    // The first leads (its caches synced is logged as leader), the second stands by.
    const first = this.startReplica();
    await first.process.waitForLine((l) => l.msg === 'caches synced', 'caches synced', 90_000);
    this.startReplica();
  }

  /** A controller replica; when it ends unasked, a new one takes its place (a pod restart). */
  startReplica(): Replica {
    const name = `replica-${++this.replicaSeq}`;
    const process = startControllerProcess({
      dir: this.dir,
      name,
      rancherKubeconfig: this.kubeconfig,
      namespace: NS,
      systemNamespace: SYSTEM_NS,
      extraArgs: ['--gate-deadline', this.gateDeadline, '--probe-interval', '1m'],
    });
    const replica = { name, process };
    this.replicas.push(replica);
    void process.exited.then((code) => {
      const i = this.replicas.indexOf(replica);
      if (i < 0 || this.stopping) return; // stopped or killed on purpose
      this.replicas.splice(i, 1);
      this.unplannedExits.push({ name, code, at: Date.now() });
      this.startReplica();
    });
    return replica;
  }

  /** SIGKILL, as a node failure: the replica is replaced after `restartAfterMs`. */
  async killReplica(replica: Replica, restartAfterMs: number): Promise<void> {
    const i = this.replicas.indexOf(replica);
    if (i >= 0) this.replicas.splice(i, 1);
    await replica.process.kill();
    setTimeout(() => {
      if (!this.stopping) this.startReplica();
    }, restartAfterMs).unref();
  }

  async leaseHolder(): Promise<string | undefined> {
    const lease = await this.rancher.find<KubeObject & { spec?: { holderIdentity?: string } }>(
      Resources.lease,
      {
        namespace: SYSTEM_NS,
        name: LEASE,
      },
    );
    return lease?.spec?.holderIdentity;
  }

  /** The replica holding the Lease (its identity ends with its pid). */
  async leader(): Promise<Replica | undefined> {
    const holder = await this.leaseHolder();
    return this.replicas.find((r) => holder?.endsWith(`-${r.process.pid ?? ''}`));
  }

  /** The Rancher kubeconfig for a token, through the Harvester-side chaos proxy. */
  kubeconfigFor(token: SandboxRancherToken): string {
    return rancherKubeconfig({
      proxyUrl: this.harvesterSide.url,
      clusterId: this.sandbox.clusterId,
      caPem: this.sandbox.proxy.caPem,
      token: token.token,
    });
  }

  async saveCredential(name: string, token: SandboxRancherToken): Promise<void> {
    await saveHarvesterCloudCredential(
      this.rancher,
      harvesterCloudCredential({
        name,
        kubeconfig: this.kubeconfigFor(token),
        clusterId: this.sandbox.clusterId,
        ...(token.expiresAt ? { expiresAt: token.expiresAt } : {}),
      }),
    );
  }

  /**
   * Rancher's create job with our driver in process: Create with the pool's flags and the
   * credential of the job's environment, the driver's config in `<m>-machine-state` as
   * rancher-machine leaves it for the rm job: saved before the create too, as libmachine saves
   * the host before it creates it, so that a create that failed half-way (a VM made, its wait
   * cut by a fault) is removed by the rm job like any other.
   */
  private driverCreateJob(store: string): CreateJob {
    return async ({ harvesterMachine: hm, env, clusterName }) => {
      const machineName = hm.metadata.name;
      const instanceName = rancherInstanceName(machineName);
      const driver = new HarvesterDriver({ env, argv: [], logger: silentLogger });
      const saveState = async (): Promise<void> => {
        const secret = machineStateSecret({
          namespace: hm.metadata.namespace ?? '',
          machineName,
          instanceName,
          driverConfig: driver.config,
          owner: hm,
        });
        await this.rancher.patch(
          Resources.secret,
          { namespace: hm.metadata.namespace ?? '', name: secret.metadata.name },
          { data: (secret as KubeObject & { data?: unknown }).data },
        );
      };
      try {
        driver.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: instanceName, StorePath: store })));
        driver.setConfigFromFlags(
          machineFlags({
            name: instanceName,
            kubeconfig: env.HARVESTER_KUBECONFIG_CONTENT ?? '',
            storePath: store,
            clusterName,
            namespace: VM_NS,
            flags: { 'harvester-create-timeout': 120, 'harvester-remove-timeout': 120 },
          }),
        );
        await saveState();
        await driver.create();
        await saveState();
        const ip = driver.config.IPAddress;
        return ip ? { addresses: [{ type: 'InternalIP', address: ip }] } : {};
      } finally {
        driver.close();
      }
    };
  }

  async stop(): Promise<void> {
    for (const stop of this.stops.splice(0).reverse()) await stop().catch(() => undefined);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
