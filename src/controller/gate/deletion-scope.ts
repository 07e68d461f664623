// Is a Machine's deletion part of deleting the whole guest cluster? Only then may every
// volume of the cluster go; scale-down and node replacement keep workload volumes
// (harvester#3272). Same signal as Rancher's handler
// (docs/upstream/rancher.md#cleanup-handler), widened to the provisioning Cluster, which
// Rancher marks deleted before it deletes the CAPI Cluster.
import { ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP } from '../../harvester/labels.js';
import type { KubeObject } from '../../kube/resources.js';
import { keyTextOf } from '../../api/object-key.js';

export type DeletionScope =
  | { kind: 'not-deleting' }
  /** Scale-down, node replacement, a machine deleted by hand. */
  | { kind: 'single-machine' }
  | { kind: 'whole-cluster'; because: string }
  | { kind: 'opted-out'; on: string }
  /** Neither cluster exists: nothing says the data should go, so it stays. */
  | { kind: 'cluster-unknown' };

/** Go's strconv.ParseBool, which Rancher applies to the opt-out annotation. */
export function parseGoBool(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

const isDeleting = (o: KubeObject | undefined): boolean => Boolean(o?.metadata.deletionTimestamp);
const optedOut = (o: KubeObject | undefined): boolean =>
  parseGoBool(o?.metadata.annotations?.[ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP]) === true;
const describe = (kind: string, o: KubeObject): string => `${kind} ${keyTextOf(o)}`;

export function classifyDeletion(input: {
  machine: KubeObject;
  capiCluster: KubeObject | undefined;
  provisioningCluster: KubeObject | undefined;
}): DeletionScope {
  const { machine, capiCluster, provisioningCluster } = input;
  if (!isDeleting(machine)) return { kind: 'not-deleting' };
  // The opt-out wins over everything, on either cluster, as in Rancher.
  for (const [kind, cluster] of [
    ['Cluster (cluster.x-k8s.io)', capiCluster],
    ['Cluster (provisioning.cattle.io)', provisioningCluster],
  ] as const) {
    if (cluster && optedOut(cluster)) return { kind: 'opted-out', on: describe(kind, cluster) };
  }
  if (capiCluster && isDeleting(capiCluster)) {
    return {
      kind: 'whole-cluster',
      because: `${describe('Cluster (cluster.x-k8s.io)', capiCluster)} is being deleted`,
    };
  }
  if (provisioningCluster && isDeleting(provisioningCluster)) {
    return {
      kind: 'whole-cluster',
      because: `${describe('Cluster (provisioning.cattle.io)', provisioningCluster)} is being deleted`,
    };
  }
  if (!capiCluster && !provisioningCluster) return { kind: 'cluster-unknown' };
  return { kind: 'single-machine' };
}
