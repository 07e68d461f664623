// A Rancher-provisioned guest cluster, created as Rancher creates it, for tests, benchmarks and
// the walkthrough: the provisioning Cluster with its pools, the CAPI Cluster, the
// `<cluster>-kubeconfig` Secret through which Cluster API reaches the guest's apiserver, and per
// pool a HarvesterMachineTemplate, an RKEBootstrapTemplate and a MachineDeployment
// (SafeConcatName(cluster, pool)). The real Cluster API (sandbox/capi) then makes the
// MachineSets, Machines, HarvesterMachines and RKEBootstraps; Rancher's stand-in
// (rancher-standin.ts) runs each machine's create job and registers its node; this resolves once
// every Machine is Running. A pool may instead name its machines: stand-alone Machines, as a user
// would create them (Cluster API adopts them into the Cluster). On Harvester, createMachineVm
// makes a machine's VM as the driver builds it.
import { keyText } from '../../src/api/object-key.js';
import crypto from 'node:crypto';
import type { OwnerReference } from '../../src/api/meta.js';
import { newDriverConfig, type DriverConfig } from '../../src/driver/config/index.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../src/rancher/labels.js';
import { buildVirtualMachine } from '../../src/harvester/vm-spec.js';
import type { KubeClient } from '../../src/kube/client.js';
import { isConflict } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { machineDeploymentName, rancherInstanceName } from '../../src/rancher/names.js';
import { SandboxResources } from '../capi/resources.js';
import { SEED_NAMESPACE, SEED_NETWORK } from '../sandbox-seeds.js';
import {
  CAPI_API,
  clusterObjects,
  kubeconfigSecretObject,
  machineDeploymentObject,
  machineTemplateObject,
  ownedByCluster,
  poolLabels,
  poolMachineSpec,
  provisioningClusterObject,
  type GuestClusterSpec,
  type GuestPool,
} from './guest-cluster-objects.js';

export { FINALIZER_PROVISIONING_CLUSTER } from './guest-cluster-objects.js';
export type { GuestClusterSpec, GuestPool } from './guest-cluster-objects.js';
/** Cluster API's choice of which Machine a scale-down removes first. */
export const ANNOTATION_DELETE_MACHINE = 'cluster.x-k8s.io/delete-machine';

export interface GuestMachine {
  name: string;
  pool: string;
  /** The VM's name: SafeConcatName of the machine name. */
  instanceName: string;
}

const rand = (n: number): string => crypto.randomBytes(n).toString('hex').slice(0, n);

interface MachineObject extends KubeObject {
  status?: { phase?: string };
}

/**
 * Creates a guest cluster as Rancher does and resolves with its machines once every Machine is
 * Running.
 */
export async function createGuestCluster(
  rancher: KubeClient,
  spec: GuestClusterSpec,
): Promise<GuestMachine[]> {
  const pc = await rancher.create<KubeObject>(Resources.provisioningCluster, provisioningClusterObject(spec));
  const owner = ownedByCluster(spec.name, pc.metadata.uid ?? '');
  if (spec.downstreamKubeconfig !== undefined)
    await rancher.create<KubeObject>(
      Resources.secret,
      kubeconfigSecretObject(spec, spec.downstreamKubeconfig, owner),
    );
  for (const { type, object } of clusterObjects(spec, owner)) await rancher.create<KubeObject>(type, object);
  const expected = new Map<string, number>();
  for (const pool of spec.pools) expected.set(pool.name, await createPool(rancher, spec, pool, owner));
  return waitRunning(rancher, spec, expected);
}

/**
 * A pool's machines: its named stand-alone Machines, or a HarvesterMachineTemplate and a
 * MachineDeployment. Resolves with how many Machines the pool will have.
 */
async function createPool(
  rancher: KubeClient,
  spec: GuestClusterSpec,
  pool: GuestPool,
  owner: OwnerReference[],
): Promise<number> {
  const machineSpec = poolMachineSpec(spec, pool);
  if (pool.machineNames) {
    for (const machineName of pool.machineNames)
      await createStandaloneMachine(rancher, spec, pool.name, machineName, machineSpec);
    return pool.machineNames.length;
  }
  const template = `${machineDeploymentName(spec.name, pool.name)}-${rand(8)}`;
  await rancher.create<KubeObject>(
    SandboxResources.harvesterMachineTemplate,
    machineTemplateObject(spec, template, machineSpec, owner),
  );
  await rancher.create<KubeObject>(
    SandboxResources.machineDeployment,
    machineDeploymentObject(spec, pool, template),
  );
  return pool.quantity;
}

async function createStandaloneMachine(
  rancher: KubeClient,
  spec: GuestClusterSpec,
  pool: string,
  machineName: string,
  machineSpec: Record<string, unknown>,
): Promise<void> {
  const { namespace, name } = spec;
  const labels = poolLabels(name, pool);
  const machine = await rancher.create<KubeObject>(Resources.capiMachine, {
    apiVersion: CAPI_API,
    kind: 'Machine',
    metadata: { name: machineName, namespace, labels },
    spec: {
      clusterName: name,
      bootstrap: {
        configRef: { apiVersion: 'rke.cattle.io/v1', kind: 'RKEBootstrap', name: machineName, namespace },
      },
      infrastructureRef: {
        apiVersion: 'rke-machine.cattle.io/v1',
        kind: 'HarvesterMachine',
        name: machineName,
        namespace,
      },
    },
  } as KubeObject);
  const owner = [
    {
      apiVersion: CAPI_API,
      kind: 'Machine',
      name: machineName,
      uid: machine.metadata.uid ?? '',
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
  await rancher.create<KubeObject>(SandboxResources.rkeBootstrap, {
    apiVersion: 'rke.cattle.io/v1',
    kind: 'RKEBootstrap',
    metadata: { name: machineName, namespace, labels, ownerReferences: owner },
    spec: { clusterName: name },
  } as KubeObject);
  await rancher.create<KubeObject>(Resources.harvesterMachine, {
    apiVersion: 'rke-machine.cattle.io/v1',
    kind: 'HarvesterMachine',
    metadata: { name: machineName, namespace, labels, ownerReferences: owner },
    spec: machineSpec,
  } as KubeObject);
}

/** Until every pool has its Machines and each is Running (Cluster API's phase): a short poll of one list, through transient errors. */
async function waitRunning(
  rancher: KubeClient,
  spec: GuestClusterSpec,
  expected: Map<string, number>,
): Promise<GuestMachine[]> {
  const timeoutMs = spec.timeoutMs ?? 120_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    spec.signal?.throwIfAborted();
    let list: { items: MachineObject[] };
    try {
      list = await rancher.list<MachineObject>(Resources.capiMachine, {
        namespace: spec.namespace,
        labelSelector: `${CAPI_LABEL_CLUSTER_NAME}=${spec.name}`,
      });
    } catch (err) {
      // An apiserver restarting under the wait (the chaos run does that): poll on, as waitFor does.
      if (!rancher.isTransient(err) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
      continue;
    }
    const live = list.items.filter((m) => !m.metadata.deletionTimestamp);
    const byPool = (pool: string): MachineObject[] =>
      live.filter((m) => m.metadata.labels?.['rke.cattle.io/rke-machine-pool-name'] === pool);
    const ready = [...expected].every(
      ([pool, n]) => byPool(pool).length === n && byPool(pool).every((m) => m.status?.phase === 'Running'),
    );
    if (ready)
      return [...expected.keys()].flatMap((pool) =>
        byPool(pool)
          .map((m) => m.metadata.name)
          .sort()
          .map((machineName) => ({
            name: machineName,
            pool,
            instanceName: rancherInstanceName(machineName),
          })),
      );
    if (Date.now() > deadline) throw new Error(await notRunning(rancher, spec, live, timeoutMs));
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** What each Machine and its HarvesterMachine show, for the timeout error. */
async function notRunning(
  rancher: KubeClient,
  spec: GuestClusterSpec,
  live: MachineObject[],
  timeoutMs: number,
): Promise<string> {
  const infra = await rancher.list<
    KubeObject & {
      status?: { ready?: boolean; conditions?: Array<{ type: string; status: string; message?: string }> };
    }
  >(Resources.harvesterMachine, {
    namespace: spec.namespace,
    labelSelector: `${CAPI_LABEL_CLUSTER_NAME}=${spec.name}`,
  });
  const describe = (m: MachineObject): string => {
    const hm = infra.items.find((h) => h.metadata.name === m.metadata.name);
    const conditions = (hm?.status?.conditions ?? []).map(
      (c) => `${c.type}=${c.status}${c.message ? ` (${c.message.slice(0, 200)})` : ''}`,
    );
    const state = hm ? `ready=${String(hm.status?.ready ?? false)} ${conditions.join(', ')}` : 'missing';
    return `${m.metadata.name}: ${m.status?.phase ?? 'no phase'}; HarvesterMachine ${state}`;
  };
  return `guest cluster ${keyText(spec.namespace, spec.name)}: its Machines were not all Running within ${timeoutMs / 1000} s (${live.map(describe).join('; ') || 'none yet'})`;
}

/**
 * A scale-down as Rancher does it when a user deletes one node of a pool: the Machine is marked
 * for Cluster API's MachineSet and the pool's MachineDeployment loses a replica.
 */
export async function scaleDownPool(
  rancher: KubeClient,
  opts: { namespace: string; cluster: string; pool: string; machine: string },
): Promise<void> {
  await rancher.patch(
    Resources.capiMachine,
    { namespace: opts.namespace, name: opts.machine },
    {
      metadata: { annotations: { [ANNOTATION_DELETE_MACHINE]: 'yes' } },
    },
  );
  const at = { namespace: opts.namespace, name: machineDeploymentName(opts.cluster, opts.pool) };
  // Cluster API writes the MachineDeployment's status meanwhile: read again on a Conflict.
  for (let attempt = 1; ; attempt++) {
    const md = await rancher.get<KubeObject & { spec?: { replicas?: number } }>(
      SandboxResources.machineDeployment,
      at,
    );
    try {
      await rancher.patch(SandboxResources.machineDeployment, at, {
        metadata: { resourceVersion: md.metadata.resourceVersion },
        spec: { replicas: Math.max(0, (md.spec?.replicas ?? 1) - 1) },
      });
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= 10) throw err;
    }
  }
}

/** The driver config saved at create time (its kubeconfig may since have expired). */
export function savedDriverConfig(opts: {
  instanceName: string;
  clusterName: string;
  vmNamespace: string;
  kubeconfig: string;
  image?: string;
}): DriverConfig {
  const cfg = newDriverConfig(opts.instanceName, '/home/machine/.docker/machine');
  return {
    ...cfg,
    KubeConfigContent: opts.kubeconfig,
    VMNamespace: opts.vmNamespace,
    ClusterName: opts.clusterName,
    ClusterType: 'imported',
    CPU: 2,
    MemorySize: '4Gi',
    SSHUser: 'ubuntu',
    SSHPort: 22,
    DiskInfo: {
      disks: [
        {
          imageName: opts.image ?? '',
          storageClassName: opts.image ? '' : 'longhorn',
          size: 10,
          bootOrder: 1,
          bus: 'virtio',
          type: 'disk',
          hotPlugAble: false,
        },
      ],
    },
    NetworkInfo: {
      interfaces: [
        // The sandbox's seeded VLAN: Harvester's VM mutator refuses (500) a network that does not exist.
        {
          networkName: keyText(SEED_NAMESPACE, SEED_NETWORK),
          macAddress: '',
          model: 'virtio',
          type: 'bridge',
        },
      ],
    },
    HarvesterMachine: { ...cfg.HarvesterMachine, RemoveTimeoutSeconds: 60 },
  };
}

/**
 * The machine's VM on Harvester, as the driver's create builds it (a boot disk from
 * `image` "ns/name" with its storage class, or a blank longhorn disk).
 */
export async function createMachineVm(
  harvester: KubeClient,
  opts: {
    instanceName: string;
    clusterName: string;
    vmNamespace: string;
    image?: string;
    imageStorageClass?: string;
  },
): Promise<KubeObject> {
  const cfg = savedDriverConfig({ ...opts, kubeconfig: '' });
  const { vm } = buildVirtualMachine(cfg, {
    random: () => rand(5),
    imageStorageClass: () => opts.imageStorageClass,
  });
  return harvester.create<KubeObject>(Resources.virtualMachine, vm);
}
