// Generated Rancher-side objects of ordinary size for the scale benchmarks: what Rancher and
// Cluster API keep for each machine of a guest cluster (the rke-machine HarvesterMachine with
// its driver settings, the CAPI Machine with the labels, owners, finalizers and status Cluster
// API writes), for each cluster (the provisioning Cluster with two pools and chart values, the
// CAPI Cluster) and for each cloud credential. Written straight to the apiserver in parallel.
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import type { KubeClient } from '../../src/kube/client.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../src/rancher/labels.js';
import { CLOUD_PROVIDER_CHART } from '../../src/rancher/chart-values.js';

export const MACHINES_PER_CLUSTER = 10;
export const CLUSTERS_PER_CREDENTIAL = 10;

const USER_DATA = `#cloud-config\npackage_update: true\npackages: [qemu-guest-agent]\nruncmd:\n${'  - [systemctl, enable, --now, qemu-guest-agent.service]\n'.repeat(30)}`;
const pad = (i: number): string => String(i).padStart(5, '0');
export const clusterName = (c: number): string => `scale-${pad(c)}`;
export const machineName = (i: number): string =>
  `${clusterName(Math.floor(i / MACHINES_PER_CLUSTER))}-pool1-7f8d9c5b6x-${pad(i)}`;
export const credentialName = (k: number): string => `cc-scale-${pad(k)}`;
const credentialOf = (c: number): string =>
  `cattle-global-data:${credentialName(Math.floor(c / CLUSTERS_PER_CREDENTIAL))}`;
const time = '2026-11-30T10:00:00Z';

/** Runs fn over items with at most `limit` in flight. */
export async function inParallel<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

export function harvesterMachine(i: number, namespace: string): KubeObject {
  const c = Math.floor(i / MACHINES_PER_CLUSTER);
  const name = machineName(i);
  return {
    apiVersion: 'rke-machine.cattle.io/v1',
    kind: 'HarvesterMachine',
    metadata: {
      name,
      namespace,
      labels: {
        [CAPI_LABEL_CLUSTER_NAME]: clusterName(c),
        'rke.cattle.io/cluster-name': clusterName(c),
        'rke.cattle.io/rke-machine-pool-name': 'pool1',
        'rke.cattle.io/capi-machine-name': name,
        'rke.cattle.io/worker-role': 'true',
        'cluster.x-k8s.io/deployment-name': `${clusterName(c)}-pool1`,
        'cluster.x-k8s.io/set-name': `${clusterName(c)}-pool1-7f8d9c5b6x`,
      },
      annotations: {
        'cluster.x-k8s.io/cloned-from-groupkind': 'HarvesterMachineTemplate.rke-machine.cattle.io',
        'cluster.x-k8s.io/cloned-from-name': `${clusterName(c)}-pool1-a1b2c3d4`,
      },
      ownerReferences: [
        {
          apiVersion: 'cluster.x-k8s.io/v1beta1',
          kind: 'Machine',
          name,
          uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      finalizers: ['wrangler.cattle.io/machine-provision-remove'],
    },
    spec: {
      vmNamespace: 'default',
      cpuCount: '4',
      memorySize: '8',
      diskSize: '40',
      diskBus: 'virtio',
      imageName: 'default/image-ubuntu',
      diskInfo: JSON.stringify({ disks: [{ imageName: 'default/image-ubuntu', size: 40, bootOrder: 1 }] }),
      networkInfo: JSON.stringify({ interfaces: [{ networkName: 'default/vlan1' }] }),
      networkName: 'default/vlan1',
      networkModel: 'virtio',
      sshUser: 'ubuntu',
      sshPort: '22',
      userData: USER_DATA,
      networkData: '',
      vmAffinity: '',
      providerID: `harvester://${name}`,
      common: { cloudCredentialSecretName: credentialOf(c) },
    },
    status: {
      ready: true,
      driverHash: 'a'.repeat(64),
      driverUrl: 'https://rancher.example/assets/docker-machine-driver-harvester',
      addresses: [
        { type: 'InternalIP', address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` },
        { type: 'Hostname', address: name },
      ],
      conditions: ['CreateJob', 'Ready', 'Reconciled'].map((type) => ({
        type,
        status: 'True',
        lastUpdateTime: time,
        message: '',
        reason: '',
      })),
      cloudCredentialSecretName: credentialOf(c),
      jobName: `${name}-machine-provision`,
    },
  } as KubeObject;
}

export function capiMachine(i: number, namespace: string, hook: string): KubeObject {
  const c = Math.floor(i / MACHINES_PER_CLUSTER);
  const name = machineName(i);
  const condition = (type: string) => ({ type, status: 'True', lastTransitionTime: time });
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Machine',
    metadata: {
      name,
      namespace,
      labels: {
        [CAPI_LABEL_CLUSTER_NAME]: clusterName(c),
        'cluster.x-k8s.io/deployment-name': `${clusterName(c)}-pool1`,
        'cluster.x-k8s.io/set-name': `${clusterName(c)}-pool1-7f8d9c5b6x`,
        'machine-template-hash': '3948571623',
        'rke.cattle.io/cluster-name': clusterName(c),
        'rke.cattle.io/rke-machine-pool-name': 'pool1',
        'rke.cattle.io/worker-role': 'true',
      },
      annotations: { [hook]: 'harvester-machine-controller' },
      ownerReferences: [
        {
          apiVersion: 'cluster.x-k8s.io/v1beta1',
          kind: 'MachineSet',
          name: `${clusterName(c)}-pool1-7f8d9c5b6x`,
          uid: `00000000-0000-4000-9000-${String(c).padStart(12, '0')}`,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      finalizers: ['machine.cluster.x-k8s.io'],
    },
    spec: {
      clusterName: clusterName(c),
      bootstrap: {
        configRef: { apiVersion: 'rke.cattle.io/v1', kind: 'RKEBootstrap', name, namespace },
        dataSecretName: `${name}-machine-bootstrap`,
      },
      infrastructureRef: {
        apiVersion: 'rke-machine.cattle.io/v1',
        kind: 'HarvesterMachine',
        name,
        namespace,
      },
      providerID: `harvester://${name}`,
      nodeDeletionTimeout: '10s',
      version: 'v1.33.5+rke2r1',
    },
    status: {
      phase: 'Running',
      bootstrapReady: true,
      infrastructureReady: true,
      observedGeneration: 2,
      lastUpdated: time,
      nodeRef: {
        apiVersion: 'v1',
        kind: 'Node',
        name,
        uid: `00000000-0000-4000-a000-${String(i).padStart(12, '0')}`,
      },
      addresses: [{ type: 'InternalIP', address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` }],
      nodeInfo: {
        architecture: 'amd64',
        bootID: 'b'.repeat(36),
        containerRuntimeVersion: 'containerd://2.0.5-k3s1',
        kernelVersion: '6.8.0-79-generic',
        kubeProxyVersion: 'v1.33.5+rke2r1',
        kubeletVersion: 'v1.33.5+rke2r1',
        machineID: 'c'.repeat(32),
        operatingSystem: 'linux',
        osImage: 'Ubuntu 24.04.3 LTS',
        systemUUID: 'd'.repeat(36),
      },
      conditions: [
        'Ready',
        'BootstrapReady',
        'InfrastructureReady',
        'NodeHealthy',
        'DrainingSucceeded',
        'PreTerminateDeleteHookSucceeded',
      ].map(condition),
      v1beta2: {
        conditions: [
          'Available',
          'Ready',
          'UpToDate',
          'BootstrapConfigReady',
          'InfrastructureReady',
          'NodeReady',
        ].map((type) => ({ ...condition(type), observedGeneration: 2, reason: type, message: '' })),
      },
    },
  } as KubeObject;
}

export function provisioningCluster(c: number, namespace: string): KubeObject {
  const pool = (name: string, quantity: number) => ({
    name,
    quantity,
    workerRole: true,
    etcdRole: name === 'cp',
    controlPlaneRole: name === 'cp',
    machineConfigRef: { kind: 'HarvesterConfig', name: `nc-${clusterName(c)}-${name}` },
    drainBeforeDelete: true,
    unhealthyNodeTimeout: '0s',
    labels: { 'pool.example/tier': name },
  });
  return {
    apiVersion: 'provisioning.cattle.io/v1',
    kind: 'Cluster',
    metadata: {
      name: clusterName(c),
      namespace,
      finalizers: ['wrangler.cattle.io/provisioning-cluster-remove'],
      annotations: { 'field.cattle.io/creatorId': 'user-abcde', 'ui.rancher/badge-color': '#ff0000' },
    },
    spec: {
      cloudCredentialSecretName: credentialOf(c),
      kubernetesVersion: 'v1.33.5+rke2r1',
      localClusterAuthEndpoint: {},
      rkeConfig: {
        chartValues: {
          [CLOUD_PROVIDER_CHART]: {
            global: { cattle: { clusterName: clusterName(c) } },
            cloudConfigPath: '/var/lib/rancher/rke2/etc/config-files/cloud-provider-config',
          },
          'rke2-calico': {},
        },
        machineGlobalConfig: { cni: 'calico', 'disable-kube-proxy': false, 'etcd-expose-metrics': false },
        machinePools: [pool('cp', 3), pool('pool1', MACHINES_PER_CLUSTER)],
        machineSelectorConfig: [
          { config: { 'cloud-provider-name': 'harvester', 'protect-kernel-defaults': false } },
        ],
        upgradeStrategy: {
          controlPlaneConcurrency: '1',
          workerConcurrency: '1',
          controlPlaneDrainOptions: { enabled: false },
          workerDrainOptions: { enabled: false },
        },
      },
    },
  } as KubeObject;
}

export function capiCluster(c: number, namespace: string): KubeObject {
  const name = clusterName(c);
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name, namespace, labels: { 'rke.cattle.io/cluster-name': name } },
    spec: {
      controlPlaneEndpoint: { host: `${name}.example`, port: 6443 },
      infrastructureRef: { apiVersion: 'rke.cattle.io/v1', kind: 'RKECluster', name, namespace },
      controlPlaneRef: { apiVersion: 'rke.cattle.io/v1', kind: 'RKEControlPlane', name, namespace },
    },
  } as KubeObject;
}

/** Writes machines [from, to) with their clusters and credentials; returns the objects written. */
export async function writeMachines(
  admin: KubeClient,
  opts: { namespace: string; from: number; to: number; hook: string; credential: (k: number) => KubeObject },
): Promise<number> {
  const { namespace, from, to, hook } = opts;
  const clusters = range(Math.ceil(from / MACHINES_PER_CLUSTER), Math.ceil(to / MACHINES_PER_CLUSTER));
  // A credential is written with the first of its clusters.
  const [first = 0, last = -1] = [clusters[0], clusters.at(-1)];
  const credentials = range(
    Math.ceil(first / CLUSTERS_PER_CREDENTIAL),
    Math.floor(last / CLUSTERS_PER_CREDENTIAL) + 1,
  );
  const objects: Array<readonly [ResourceType, KubeObject]> = [
    ...credentials.map((k) => [Resources.secret, opts.credential(k)] as const),
    ...clusters.flatMap((c) => [
      [Resources.provisioningCluster, provisioningCluster(c, namespace)] as const,
      [Resources.capiCluster, capiCluster(c, namespace)] as const,
    ]),
    ...range(from, to).flatMap((i) => [
      [Resources.capiMachine, capiMachine(i, namespace, hook)] as const,
      [Resources.harvesterMachine, harvesterMachine(i, namespace)] as const,
    ]),
  ];
  await inParallel(objects, 32, ([type, body]) => admin.create(type, body));
  return objects.length;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
