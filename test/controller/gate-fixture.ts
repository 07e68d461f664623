// The world of the controller's integration tests: Rancher's local cluster with the real
// Cluster API manager (sandbox/capi; the version from HARVESTER_MACHINE_CAPI_VERSION or the
// fixture's option) and Rancher's stand-in for its own controllers (bootstrap, machine
// provisioning, rm jobs), a Harvester control plane, Harvester users whose bootstrap tokens
// expire when told, cloud credentials for them, and the controller itself, started through
// main.ts's run() as a user bound to exactly the chart's RBAC (or, for failover tests, as
// processes). Everything is stopped after the file's tests.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { createLogger } from '../../src/log/logger.js';
import { parseConfig } from '../../src/controller/process/config.js';
import { run, type Running } from '../../src/controller/process-main.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { createTokenUser, tokenKubeconfig, type TokenUser } from '../../sandbox/control-plane/access.js';
import {
  clusterApiVersion,
  machineType,
  startRancherWithClusterApi,
  type ClusterApi,
  type ClusterApiVersion,
} from '../../sandbox/capi/index.js';
import { startControlPlane, type ControlPlane } from '../../sandbox/control-plane/control-plane.js';
import { installCrds } from '../../sandbox/crds/install.js';
import { harvesterCloudCredential, saveHarvesterCloudCredential } from '../../sandbox/rancher/credentials.js';
import {
  createGuestCluster,
  createMachineVm,
  type GuestClusterSpec,
  type GuestMachine,
} from '../../sandbox/rancher/guest-cluster.js';
import {
  startRancherStandIn,
  type RancherStandIn,
  type RemovalJob,
} from '../../sandbox/rancher/rancher-standin.js';
import { startSandbox, type Sandbox } from '../../sandbox/sandbox.js';
import { bindChartRbac } from './chart-rbac.js';

export const NS = 'fleet-test';
export const VM_NS = 'vms';
export const SYSTEM_NS = 'hm-system';
export const HARVESTER_ID = 'c-m-harv1';

export interface RemovalObservation {
  machine: string;
  /** The VM's removeAllPersistentVolumeClaims annotation when the job started. */
  annotation: string | undefined;
  vmFound: boolean;
  kubeconfigUser: string | undefined;
}

export interface GateWorld {
  rancher: ControlPlane;
  harvester: ControlPlane;
  clusterApi: ClusterApi;
  /** Absent with `controller: false` (the test starts its own). */
  controller: Running | undefined;
  standIn: RancherStandIn;
  observations: RemovalObservation[];
  logLines: string[];
  /** A Harvester user allowed to read and change VMs, and its kubeconfig. */
  harvesterUser(name: string, expiresAt: Date): Promise<{ user: TokenUser; kubeconfig: string }>;
  saveCredential(name: string, kubeconfig: string, expiresAt?: Date): Promise<void>;
  /** A guest cluster as Rancher makes it (Cluster API creates its Machines), and each machine's VM. */
  guest(
    spec: Omit<GuestClusterSpec, 'namespace' | 'vmNamespace' | 'downstreamKubeconfig'>,
  ): Promise<GuestMachine[]>;
  waitGone(type: typeof Resources.provisioningCluster, name: string, timeoutMs?: number): Promise<void>;
  events(
    reason: string,
  ): Promise<Array<KubeObject & { message?: string; involvedObject?: { name?: string; kind?: string } }>>;
}

/**
 * What a cloud credential's user needs for the gate, the load balancer cleanup and the guest
 * volumes' record and cleanup.
 */
const VM_RULES = [
  {
    apiGroups: ['kubevirt.io'],
    resources: ['virtualmachines'],
    verbs: ['get', 'list', 'patch', 'update', 'delete'],
  },
  { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['list'] },
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
  { apiGroups: ['loadbalancer.harvesterhci.io'], resources: ['loadbalancers'], verbs: ['list', 'delete'] },
  {
    apiGroups: ['harvesterhci.io'],
    resources: ['settings'],
    resourceNames: ['server-version'],
    verbs: ['get'],
  },
];

/**
 * The controller as the chart runs it: main.ts's run(), leader election on, a kubeconfig
 * file for a Rancher user bound to exactly the chart's RBAC, JSON logs captured.
 */
/** A kubeconfig for a Rancher user bound to exactly the chart's RBAC. */
export async function chartKubeconfig(
  rancher: ControlPlane,
  opts: { namespace: string; systemNamespace: string },
): Promise<string> {
  const controllerUser = await createTokenUser(rancher.admin, {
    expiresAt: new Date(Date.now() + 86_400_000),
  });
  await bindChartRbac(rancher.admin, controllerUser.username, {
    watchNamespaces: [opts.namespace],
    credentialNamespace: 'cattle-global-data',
    systemNamespace: opts.systemNamespace,
  });
  return tokenKubeconfig({
    name: 'rancher',
    server: rancher.server,
    caPem: rancher.caPem,
    token: controllerUser.token,
  });
}

export async function startControllerAsChart(
  rancher: ControlPlane,
  opts: { namespace: string; systemNamespace: string; gateDeadline: string },
): Promise<{ controller: Running; logLines: string[]; stop: () => Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-controller-'));
  const kubeconfigPath = path.join(dir, 'kubeconfig');
  fs.writeFileSync(kubeconfigPath, await chartKubeconfig(rancher, opts), { mode: 0o600 });
  const logLines: string[] = [];
  const logger = createLogger({
    format: 'json',
    level: 'debug',
    sink: { write: (_l, line) => logLines.push(line) },
  });
  const config = parseConfig(
    [
      '--kubeconfig',
      kubeconfigPath,
      '--namespace',
      opts.namespace,
      '--leader-election-namespace',
      opts.systemNamespace,
      '--metrics-bind-address',
      '127.0.0.1:0',
      '--gate-deadline',
      opts.gateDeadline,
      '--probe-interval',
      '1m',
    ],
    { POD_NAME: 'hm-test-0' },
  );
  const controller = await run(config, logger, {});
  return {
    controller,
    logLines,
    stop: async () => {
      await controller.shutdown();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What useSandboxWorld gives the tests once `before` ran. */
export interface SandboxWorld {
  readonly sandbox: Sandbox;
  readonly standIn: RancherStandIn;
  readonly controller: Awaited<ReturnType<typeof startControllerAsChart>>;
}

/**
 * The whole sandbox for a file's tests: Harvester's stand-ins (short guest-agent and shutdown
 * delays), Rancher's local cluster with the real Cluster API manager watching `namespace`,
 * Rancher's stand-in running the driver's Remove in process as its rm job, and the controller
 * run as the chart runs it; `prepare` adds what the file needs before the controller starts.
 */
export function useSandboxWorld(opts: {
  namespace: string;
  systemNamespace: string;
  prepare?: (sandbox: Sandbox) => Promise<void>;
  /** Rancher's stand-in starts each guest cluster's own apiserver and writes its `<cluster>-kubeconfig`. */
  guestApiservers?: boolean;
}): SandboxWorld {
  let sandbox: Sandbox | undefined;
  let standIn: RancherStandIn | undefined;
  let controller: SandboxWorld['controller'] | undefined;
  before(async () => {
    sandbox = await startSandbox({
      standIns: { delays: { guestAgentMs: 100, shutdownMs: 50 } },
      clusterApi: { namespace: opts.namespace },
    });
    for (const name of [opts.namespace, opts.systemNamespace])
      await sandbox.rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      });
    await opts.prepare?.(sandbox);
    standIn = await startRancherStandIn(sandbox.rancher.admin, {
      namespace: opts.namespace,
      retryDelayMs: 500,
      ...(opts.guestApiservers ? { guestApiservers: { etcdUrl: sandbox.rancher.etcdUrl } } : {}),
    });
    controller = await startControllerAsChart(sandbox.rancher, {
      namespace: opts.namespace,
      systemNamespace: opts.systemNamespace,
      gateDeadline: '10m',
    });
  });
  after(async () => {
    await controller?.stop();
    await standIn?.stop();
    await sandbox?.stop();
  });
  const started = <T>(what: string, value: T | undefined): T => {
    if (value === undefined) throw new Error(`the ${what} is not started (use it inside a test)`);
    return value;
  };
  return {
    get sandbox() {
      return started('sandbox', sandbox);
    },
    get standIn() {
      return started('Rancher stand-in', standIn);
    },
    get controller() {
      return started('controller', controller);
    },
  };
}

export function useGateWorld(
  opts: { gateDeadline?: string; clusterApi?: ClusterApiVersion; controller?: boolean } = {},
): { readonly world: GateWorld; readonly version: ClusterApiVersion } {
  const version = opts.clusterApi ?? clusterApiVersion();
  let world: GateWorld | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  before(async () => {
    // Both settle before a failure is reported, so the one that did start is stopped.
    const [startedCapi, startedHarvester] = await Promise.allSettled([
      startRancherWithClusterApi({ clusterApi: { namespace: NS, version } }),
      startControlPlane({ name: 'harvester', controllerManager: false }),
    ]);
    if (startedCapi.status === 'fulfilled') cleanups.push(() => startedCapi.value.stop());
    if (startedHarvester.status === 'fulfilled') cleanups.push(() => startedHarvester.value.stop());
    if (startedCapi.status === 'rejected') throw startedCapi.reason;
    if (startedHarvester.status === 'rejected') throw startedHarvester.reason;
    const { rancher, clusterApi } = startedCapi.value;
    const harvester = startedHarvester.value;
    await installCrds(harvester.admin, 'harvester');
    for (const name of [NS, SYSTEM_NS])
      await rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      });
    await harvester.admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: VM_NS },
    });
    await saveHarvesterCloudCredential(
      rancher.admin,
      harvesterCloudCredential({
        name: 'cc-bootstrap',
        kubeconfig: 'apiVersion: v1\nkind: Config\n',
        clusterId: HARVESTER_ID,
      }),
    );

    const observations: RemovalObservation[] = [];
    // Rancher's rm Job, played by a job that looks at the VM with the credential it was
    // given (proving that credential works), records what it saw, and deletes the VM.
    const removalJob: RemovalJob = async ({ harvesterMachine, env }) => {
      const kubeconfig = env.HARVESTER_KUBECONFIG_CONTENT ?? '';
      const client = KubeClient.fromKubeconfig(kubeconfig, {
        retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
      });
      try {
        const at = {
          namespace: harvesterMachine.spec?.vmNamespace ?? '',
          name: rancherInstanceName(harvesterMachine.metadata.name),
        };
        const vm = await client.find<KubeObject>(Resources.virtualMachine, at);
        observations.push({
          machine: harvesterMachine.metadata.name,
          annotation: vm?.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS],
          vmFound: vm !== undefined,
          kubeconfigUser: client.credential.identity,
        });
        if (vm) await client.delete(Resources.virtualMachine, at);
      } finally {
        client.close();
      }
    };
    const standIn = await startRancherStandIn(rancher.admin, {
      namespace: NS,
      removalJob,
      retryDelayMs: 300,
    });
    cleanups.unshift(() => standIn.stop());

    let controller: Running | undefined;
    let logLines: string[] = [];
    if (opts.controller !== false) {
      const started = await startControllerAsChart(rancher, {
        namespace: NS,
        systemNamespace: SYSTEM_NS,
        gateDeadline: opts.gateDeadline ?? '10m',
      });
      ({ controller, logLines } = started);
      cleanups.unshift(started.stop);
    }

    world = {
      rancher,
      harvester,
      clusterApi,
      controller,
      standIn,
      observations,
      logLines,
      async guest(spec) {
        const machines = await createGuestCluster(rancher.admin, {
          ...spec,
          namespace: NS,
          vmNamespace: VM_NS,
          downstreamKubeconfig: rancher.adminKubeconfig,
        });
        for (const m of machines)
          await createMachineVm(harvester.admin, {
            instanceName: m.instanceName,
            clusterName: spec.name,
            vmNamespace: VM_NS,
          });
        return machines;
      },
      async harvesterUser(name, expiresAt) {
        const user = await createTokenUser(harvester.admin, { expiresAt, rules: VM_RULES });
        return {
          user,
          kubeconfig: tokenKubeconfig({
            name,
            server: harvester.server,
            caPem: harvester.caPem,
            token: user.token,
          }),
        };
      },
      async saveCredential(name, kubeconfig, expiresAt) {
        await saveHarvesterCloudCredential(
          rancher.admin,
          harvesterCloudCredential({
            name,
            kubeconfig,
            clusterId: HARVESTER_ID,
            ...(expiresAt ? { expiresAt } : {}),
          }),
        );
      },
      async waitGone(type, name, timeoutMs = 60_000) {
        await waitFor(rancher.admin, {
          type,
          namespace: NS,
          name,
          timeoutMs,
          description: `${type.kind} ${NS}/${name} to be deleted`,
          until: (o) => o === undefined,
        });
      },
      async events(reason) {
        const list = await rancher.admin.list<KubeObject & { message?: string }>(Resources.event, {
          fieldSelector: `reason=${reason}`,
        });
        return list.items;
      },
    };
  });
  after(async () => {
    for (const c of cleanups) await c().catch(() => undefined);
  });
  return {
    version,
    get world(): GateWorld {
      if (!world) throw new Error('the world is not started yet');
      return world;
    },
  };
}

type MachineStatus = KubeObject & {
  status?: {
    conditions?: Array<{ type: string; status: string; reason?: string }>;
    v1beta2?: { conditions?: Array<{ type: string; message?: string }> };
    deprecated?: { v1beta1?: { conditions?: Array<{ type: string; reason?: string }> } };
  };
};
const PROBE_HOOK = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/test-probe';

/**
 * A second pre-terminate hook changes what Cluster API reports (its v1beta2 Deleting condition
 * names the hooks it waits for), so it writes the Machine's status: once it has, our condition
 * must still be there. Where Cluster API stores v1beta2, the condition lives in
 * status.deprecated.v1beta1.conditions of the stored object.
 */
export async function conditionSurvivesClusterApi(
  world: GateWorld,
  version: ClusterApiVersion,
  machine: string,
): Promise<void> {
  const at = { namespace: NS, name: machine };
  await world.rancher.admin.patch(Resources.capiMachine, at, {
    metadata: { annotations: { [PROBE_HOOK]: 'test' } },
  });
  try {
    const after = await waitFor<MachineStatus>(world.rancher.admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: machine,
      timeoutMs: 30_000,
      description: "Cluster API's status write naming the probe hook",
      until: (o) =>
        o?.status?.v1beta2?.conditions?.some(
          (c) => c.type === 'Deleting' && /test-probe/.test(c.message ?? ''),
        ) ?? false,
    });
    assert.ok(
      after?.status?.conditions?.some(
        (c) => c.type === 'HarvesterVolumeCleanup' && c.reason === 'HarvesterCredentialRejected',
      ),
      `the condition survived Cluster API's status write: ${JSON.stringify(after?.status?.conditions)}`,
    );
    if (version.storage === 'v1beta2') {
      const stored = await world.rancher.admin.get<MachineStatus>(machineType('v1beta2'), at);
      assert.ok(
        stored.status?.deprecated?.v1beta1?.conditions?.some((c) => c.type === 'HarvesterVolumeCleanup'),
        `v1beta2 keeps it in status.deprecated.v1beta1.conditions: ${JSON.stringify(stored.status)}`,
      );
    }
  } finally {
    await world.rancher.admin.patch(Resources.capiMachine, at, {
      metadata: { annotations: { [PROBE_HOOK]: null } },
    });
  }
}
