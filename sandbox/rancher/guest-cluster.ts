// A Rancher-provisioned guest cluster as it stands once created, for tests and benchmarks:
// the provisioning Cluster with its pools, the CAPI Cluster, and per machine the CAPI
// Machine, the HarvesterMachine (labels, owner, the pool's credential in spec.common, as
// Rancher's template sets it) and the `<m>-machine-state` Secret with the saved driver
// config (or empty, as Rancher creates it before the create job, for machines that
// rancher-machine then creates); and, on Harvester, each machine's VM as the driver builds it. Finalizers are set
// at creation, as the controllers that own them would have, so deletion is gated at once.
import crypto from 'node:crypto';
import { newDriverConfig, type DriverConfig } from '../../src/driver/config.js';
import { ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP, isValidLabelValue } from '../../src/harvester/labels.js';
import { buildVirtualMachine } from '../../src/harvester/vm-spec.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import {
  CAPI_LABEL_CLUSTER_NAME,
  HARVESTER_MACHINE_GROUP,
  HARVESTER_MACHINE_KIND,
  LABEL_CAPI_DEPLOYMENT,
  LABEL_RKE_CAPI_MACHINE,
  LABEL_RKE_MACHINE_POOL,
} from '../../src/rancher/labels.js';
import { machineDeploymentName, rancherInstanceName } from '../../src/rancher/names.js';
import {
  FINALIZER_CAPI_CLUSTER,
  FINALIZER_CAPI_MACHINE,
  FINALIZER_HARVESTER_MACHINE,
  FINALIZER_PROVISIONING_CLUSTER,
} from './capi-standin.js';
import { machineStateSecret } from './machine-state.js';
import { randomRancherString } from './tokens.js';

export interface GuestPool {
  name: string;
  quantity: number;
  /** "cattle-global-data:cc-x": a pool-level credential. */
  credential?: string;
  /** Fixed machine names (default `<cluster>-<pool>-<hash>-<random>`). */
  machineNames?: string[];
}

export interface GuestClusterSpec {
  namespace: string;
  name: string;
  clusterCredential?: string;
  pools: GuestPool[];
  vmNamespace: string;
  optOut?: boolean;
  /**
   * The `<m>-machine-state` Secrets: "saved" (default) holds a driver config as if the
   * machine had been created; "empty" is how Rancher creates it before the first job, for
   * machines that a real `rancher-machine create` then makes (it fills the Secret).
   */
  machineState?: 'saved' | 'empty';
}

export interface GuestMachine {
  name: string;
  pool: string;
  /** The VM's name: SafeConcatName of the machine name. */
  instanceName: string;
}

const rand = (n: number): string => crypto.randomBytes(n).toString('hex').slice(0, n);

/**
 * A pool's machine names as Rancher's look: `<cluster>-<pool>-<hash>-<5 characters>`, the
 * suffix from Kubernetes' generateName alphabet. The apiserver redraws a generateName suffix
 * that is taken; drawn here, a taken one is redrawn here. (5 hex characters, as drawn before,
 * repeated within a 200-machine pool about once in 50: AlreadyExists in the benchmark.)
 */
export function poolMachineNames(cluster: string, pool: GuestPool): string[] {
  const prefix = `${cluster}-${pool.name}-${rand(8)}-`;
  const names = new Set<string>();
  for (let i = 0; names.size < pool.quantity; i++) {
    names.add(pool.machineNames?.[i] ?? prefix + randomRancherString(5));
  }
  return [...names];
}

export async function createGuestCluster(
  rancher: KubeClient,
  spec: GuestClusterSpec,
  savedKubeconfig = '',
): Promise<GuestMachine[]> {
  const { namespace, name } = spec;
  const annotations = spec.optOut ? { [ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP]: 'true' } : {};
  await rancher.create<KubeObject>(Resources.provisioningCluster, {
    apiVersion: 'provisioning.cattle.io/v1',
    kind: 'Cluster',
    metadata: { name, namespace, finalizers: [FINALIZER_PROVISIONING_CLUSTER], annotations },
    spec: {
      ...(spec.clusterCredential ? { cloudCredentialSecretName: spec.clusterCredential } : {}),
      rkeConfig: {
        machinePools: spec.pools.map((p) => ({
          name: p.name,
          quantity: p.quantity,
          workerRole: true,
          machineConfigRef: { kind: 'HarvesterConfig', name: `nc-${name}-${p.name}` },
          ...(p.credential ? { cloudCredentialSecretName: p.credential } : {}),
        })),
      },
    },
  } as KubeObject);
  await rancher.create<KubeObject>(Resources.capiCluster, {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: {
      name,
      namespace,
      finalizers: [FINALIZER_CAPI_CLUSTER],
      labels: { 'rke.cattle.io/cluster-name': name },
    },
    spec: {},
  } as KubeObject);
  const machines: GuestMachine[] = [];
  for (const pool of spec.pools) {
    for (const machineName of poolMachineNames(name, pool)) {
      await createMachine(rancher, spec, pool, machineName, savedKubeconfig);
      machines.push({ name: machineName, pool: pool.name, instanceName: rancherInstanceName(machineName) });
    }
  }
  return machines;
}

async function createMachine(
  rancher: KubeClient,
  spec: GuestClusterSpec,
  pool: GuestPool,
  machineName: string,
  savedKubeconfig: string,
): Promise<void> {
  const { namespace, name } = spec;
  const labels = {
    [CAPI_LABEL_CLUSTER_NAME]: name,
    'rke.cattle.io/cluster-name': name,
    [LABEL_CAPI_DEPLOYMENT]: machineDeploymentName(name, pool.name),
    [LABEL_RKE_MACHINE_POOL]: pool.name,
    'node-role.kubernetes.io/worker': 'true',
  };
  const machine = await rancher.create<KubeObject>(Resources.capiMachine, {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Machine',
    metadata: { name: machineName, namespace, labels, finalizers: [FINALIZER_CAPI_MACHINE] },
    spec: {
      clusterName: name,
      bootstrap: { dataSecretName: `${machineName}-bootstrap` },
      infrastructureRef: {
        apiVersion: `${HARVESTER_MACHINE_GROUP}/v1`,
        kind: HARVESTER_MACHINE_KIND,
        name: machineName,
        namespace,
      },
    },
  } as KubeObject);
  const hm = await rancher.create<KubeObject>(Resources.harvesterMachine, {
    apiVersion: `${HARVESTER_MACHINE_GROUP}/v1`,
    kind: HARVESTER_MACHINE_KIND,
    metadata: {
      name: machineName,
      namespace,
      // Label values stop at 63 characters: a longer name is found through the owner reference.
      labels: isValidLabelValue(machineName) ? { ...labels, [LABEL_RKE_CAPI_MACHINE]: machineName } : labels,
      finalizers: [FINALIZER_HARVESTER_MACHINE],
      ownerReferences: [
        {
          apiVersion: 'cluster.x-k8s.io/v1beta1',
          kind: 'Machine',
          name: machineName,
          uid: machine.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      vmNamespace: spec.vmNamespace,
      common: { cloudCredentialSecretName: pool.credential ?? spec.clusterCredential ?? null },
    },
  } as KubeObject);
  const instanceName = rancherInstanceName(machineName);
  await rancher.create(
    Resources.secret,
    machineStateSecret({
      namespace,
      machineName,
      instanceName,
      driverConfig:
        spec.machineState === 'empty'
          ? undefined
          : savedDriverConfig({
              instanceName,
              clusterName: name,
              vmNamespace: spec.vmNamespace,
              kubeconfig: savedKubeconfig,
            }),
      owner: hm,
    }),
  );
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
    MemorySize: '4',
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
        { networkName: `${opts.vmNamespace}/vlan1`, macAddress: '', model: 'virtio', type: 'bridge' },
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
