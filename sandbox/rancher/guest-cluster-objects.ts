// The objects Rancher writes for a guest cluster, built without I/O: the provisioning Cluster,
// the `<cluster>-kubeconfig` Secret, Rancher's infrastructure and control plane objects with
// the Cluster API Cluster, and per pool its HarvesterMachineTemplate and MachineDeployment.
// guest-cluster.ts creates them.
import type { OwnerReference } from '../../src/api/meta.js';
import { ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP } from '../../src/harvester/labels.js';
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { CLOUD_PROVIDER_CHART } from '../../src/rancher/chart-values.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../src/rancher/labels.js';
import { machineDeploymentName } from '../../src/rancher/names.js';
import { SandboxResources } from '../capi/resources.js';

/** One machine pool of a guest cluster. */
export interface GuestPool {
  name: string;
  quantity: number;
  /** "cattle-global-data:cc-x": a pool-level credential. */
  credential?: string;
  /** Stand-alone Machines with these names instead of a MachineDeployment (names over 63 characters). */
  machineNames?: string[];
  /** More driver fields of the pool's HarvesterConfig, as Rancher names them (`hostDeviceInfo`). */
  machineConfig?: Record<string, string>;
}

/** A guest cluster as a test or the walkthrough asks for it. */
export interface GuestClusterSpec {
  namespace: string;
  name: string;
  clusterCredential?: string;
  pools: GuestPool[];
  vmNamespace: string;
  optOut?: boolean;
  /**
   * The harvester-cloud-provider chart value global.cattle.clusterName (its --cluster-name,
   * the label of its load balancers): the cluster's name by default, as Rancher's UI sets it;
   * another name as a copied or Terraform-made cluster may carry; null for none.
   */
  cloudProviderClusterName?: string | null;
  /**
   * The guest's apiserver as Cluster API reaches it (`<cluster>-kubeconfig`): where its nodes
   * register. Absent: Rancher's stand-in starts the guest's own apiserver and writes the Secret
   * (its guestApiservers option).
   */
  downstreamKubeconfig?: string;
  /** How long to wait for every Machine to be Running (default 120 s). */
  timeoutMs?: number;
  /** Ends the wait for Running early (a caller that saw a create job fail); rejects with its reason. */
  signal?: AbortSignal;
}

/** wrangler's OnRemove handler of Rancher's provisioning Cluster. */
export const FINALIZER_PROVISIONING_CLUSTER = 'wrangler.cattle.io/provisioning-cluster-remove';
/** Cluster API's group version. */
export const CAPI_API = 'cluster.x-k8s.io/v1beta1';

/** An object to create, with its kind's resource type. */
export interface ObjectToCreate {
  type: ResourceType;
  object: KubeObject;
}

/** Rancher's labels on a pool's MachineDeployment and its machines (Cluster API copies them down). */
export function poolLabels(cluster: string, pool: string): Record<string, string> {
  return {
    [CAPI_LABEL_CLUSTER_NAME]: cluster,
    'rke.cattle.io/cluster-name': cluster,
    'rke.cattle.io/rke-machine-pool-name': pool,
    'rke.cattle.io/worker-role': 'true',
  };
}

/** The chart values naming the cluster to the Harvester cloud provider; none when the spec says null. */
function cloudProviderChartValues(spec: GuestClusterSpec): Record<string, unknown> {
  if (spec.cloudProviderClusterName === null) return {};
  return {
    chartValues: {
      [CLOUD_PROVIDER_CHART]: {
        global: { cattle: { clusterName: spec.cloudProviderClusterName ?? spec.name } },
      },
    },
  };
}

/** The provisioning Cluster with its machine pools (and the opt-out annotation when asked for). */
export function provisioningClusterObject(spec: GuestClusterSpec): KubeObject {
  const { namespace, name } = spec;
  const annotations = spec.optOut ? { [ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP]: 'true' } : {};
  return {
    apiVersion: 'provisioning.cattle.io/v1',
    kind: 'Cluster',
    metadata: { name, namespace, finalizers: [FINALIZER_PROVISIONING_CLUSTER], annotations },
    spec: {
      ...(spec.clusterCredential ? { cloudCredentialSecretName: spec.clusterCredential } : {}),
      rkeConfig: {
        ...cloudProviderChartValues(spec),
        machinePools: spec.pools.map((p) => ({
          name: p.name,
          quantity: p.quantity,
          workerRole: true,
          machineConfigRef: { kind: 'HarvesterConfig', name: `nc-${name}-${p.name}` },
          ...(p.credential ? { cloudCredentialSecretName: p.credential } : {}),
        })),
      },
    },
  } as KubeObject;
}

/** The owner references naming the provisioning Cluster `name` of UID `uid`. */
export function ownedByCluster(name: string, uid: string): OwnerReference[] {
  return [{ apiVersion: 'provisioning.cattle.io/v1', kind: 'Cluster', name, uid }];
}

/** The `<cluster>-kubeconfig` Secret Rancher's kubeconfig manager writes for Cluster API (label and type as clusterctl's). */
export function kubeconfigSecretObject(
  spec: GuestClusterSpec,
  kubeconfig: string,
  owner: OwnerReference[],
): KubeObject {
  const { namespace, name } = spec;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'cluster.x-k8s.io/secret',
    metadata: {
      name: `${name}-kubeconfig`,
      namespace,
      labels: { [CAPI_LABEL_CLUSTER_NAME]: name },
      ownerReferences: owner,
    },
    data: { value: Buffer.from(kubeconfig).toString('base64') },
  } as KubeObject;
}

/**
 * Rancher's infrastructure cluster and control plane objects (Cluster API's webhook requires a
 * Cluster to name one of them; the stand-in makes them ready), the Cluster API Cluster and the
 * pools' bootstrap template, in the order Rancher creates them.
 */
export function clusterObjects(spec: GuestClusterSpec, owner: OwnerReference[]): ObjectToCreate[] {
  const { namespace, name } = spec;
  const rke = (kind: string, rest: Record<string, unknown>): KubeObject =>
    ({ apiVersion: 'rke.cattle.io/v1', kind, ...rest }) as KubeObject;
  return [
    {
      type: SandboxResources.rkeCluster,
      object: rke('RKECluster', { metadata: { name, namespace, ownerReferences: owner }, spec: {} }),
    },
    {
      type: SandboxResources.rkeControlPlane,
      object: rke('RKEControlPlane', {
        metadata: { name, namespace, ownerReferences: owner },
        spec: { clusterName: name, kubernetesVersion: 'v1.33.5+rke2r1' },
      }),
    },
    {
      type: Resources.capiCluster,
      object: {
        apiVersion: CAPI_API,
        kind: 'Cluster',
        metadata: { name, namespace, labels: { 'rke.cattle.io/cluster-name': name } },
        spec: {
          infrastructureRef: { apiVersion: 'rke.cattle.io/v1', kind: 'RKECluster', name, namespace },
          controlPlaneRef: { apiVersion: 'rke.cattle.io/v1', kind: 'RKEControlPlane', name, namespace },
        },
      } as KubeObject,
    },
    {
      type: SandboxResources.rkeBootstrapTemplate,
      object: rke('RKEBootstrapTemplate', {
        metadata: { name: bootstrapTemplateName(name), namespace, ownerReferences: owner },
        spec: { clusterName: name, template: { spec: { clusterName: name } } },
      }),
    },
  ];
}

/** The name of the cluster's RKEBootstrapTemplate. */
function bootstrapTemplateName(cluster: string): string {
  return `${cluster}-bootstrap-template`;
}

/** A pool's machine spec (its HarvesterConfig's fields, as the machines carry them). */
export function poolMachineSpec(spec: GuestClusterSpec, pool: GuestPool): Record<string, unknown> {
  return {
    vmNamespace: spec.vmNamespace,
    ...pool.machineConfig,
    common: { cloudCredentialSecretName: pool.credential ?? spec.clusterCredential ?? null },
  };
}

/** A pool's HarvesterMachineTemplate named `template`. */
export function machineTemplateObject(
  spec: GuestClusterSpec,
  template: string,
  machineSpec: Record<string, unknown>,
  owner: OwnerReference[],
): KubeObject {
  return {
    apiVersion: 'rke-machine.cattle.io/v1',
    kind: 'HarvesterMachineTemplate',
    metadata: { name: template, namespace: spec.namespace, ownerReferences: owner },
    spec: { clusterName: spec.name, template: { spec: machineSpec } },
  } as KubeObject;
}

/** A pool's MachineDeployment, its machines made from the HarvesterMachineTemplate `template`. */
export function machineDeploymentObject(
  spec: GuestClusterSpec,
  pool: GuestPool,
  template: string,
): KubeObject {
  const { namespace, name } = spec;
  const labels = poolLabels(name, pool.name);
  return {
    apiVersion: CAPI_API,
    kind: 'MachineDeployment',
    metadata: { name: machineDeploymentName(name, pool.name), namespace, labels },
    spec: {
      clusterName: name,
      replicas: pool.quantity,
      selector: {
        matchLabels: { [CAPI_LABEL_CLUSTER_NAME]: name, 'rke.cattle.io/rke-machine-pool-name': pool.name },
      },
      template: {
        metadata: { labels },
        spec: {
          clusterName: name,
          bootstrap: {
            configRef: {
              apiVersion: 'rke.cattle.io/v1',
              kind: 'RKEBootstrapTemplate',
              name: bootstrapTemplateName(name),
              namespace,
            },
          },
          infrastructureRef: {
            apiVersion: 'rke-machine.cattle.io/v1',
            kind: 'HarvesterMachineTemplate',
            name: template,
            namespace,
          },
        },
      },
    },
  } as KubeObject;
}
