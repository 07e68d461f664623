// Guest-cluster VMs whose guest cluster no longer exists in Rancher (harvester#7940): a cluster
// deleted while the controller was not running, a VM whose rm job failed for good, a cluster
// removed from Rancher by force. Harvester alone cannot tell them: only Rancher knows which
// clusters and machines exist. A VM is orphaned when, by its label, it is a driver-made VM of
// guest cluster <c>, Rancher has no provisioning or Cluster API Cluster named <c> in any
// namespace, and no HarvesterMachine whose VM it is (by Rancher's records). Pure: the CLI lists
// both sides and deletes.
import { CREATOR, LABEL_CREATOR, LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import { keyText, keyTextOf } from '../api/object-key.js';

export interface VmLike {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    creationTimestamp?: string;
    deletionTimestamp?: string;
  };
}

export interface RancherRecords {
  /** Names of the provisioning and Cluster API Clusters, in every namespace read. */
  clusters: ReadonlySet<string>;
  /** The VM names of Rancher's HarvesterMachines (rancherInstanceName of each), "namespace/name" or bare name. */
  machineVms: ReadonlySet<string>;
}

export interface OrphanedVm {
  namespace: string;
  name: string;
  uid?: string;
  cluster: string;
  reason: string;
}

export interface OrphanedVmScan {
  orphans: OrphanedVm[];
  /** Guest-cluster VMs left out, with why. */
  skipped: Array<{ namespace: string; name: string; reason: string }>;
}

export function findOrphanedVms(
  vms: readonly VmLike[],
  rancher: RancherRecords,
  opts: { now: Date; minAgeMs: number },
): OrphanedVmScan {
  const scan: OrphanedVmScan = { orphans: [], skipped: [] };
  for (const vm of [...vms].sort((a, b) => keyTextOf(a).localeCompare(keyTextOf(b)))) {
    const { name, uid } = vm.metadata;
    const namespace = vm.metadata.namespace ?? '';
    const labels = vm.metadata.labels ?? {};
    const cluster = labels[LABEL_GUEST_CLUSTER_NAME];
    // Only what a driver made for a guest cluster: a VM made by hand is never a leftover.
    if (labels[LABEL_CREATOR] !== CREATOR || !cluster) continue;
    const skip = (reason: string) => scan.skipped.push({ namespace, name, reason });
    if (vm.metadata.deletionTimestamp) {
      skip('being deleted');
      continue;
    }
    if (rancher.clusters.has(cluster)) {
      skip(`guest cluster ${cluster} exists in Rancher`);
      continue;
    }
    if (rancher.machineVms.has(keyText(namespace, name)) || rancher.machineVms.has(name)) {
      skip(`a HarvesterMachine in Rancher still has this VM`);
      continue;
    }
    const created = Date.parse(vm.metadata.creationTimestamp ?? '');
    if (!Number.isFinite(created) || opts.now.getTime() - created < opts.minAgeMs) {
      skip('too new (or no creation time): Rancher may not have recorded it yet');
      continue;
    }
    scan.orphans.push({
      namespace,
      name,
      ...(uid ? { uid } : {}),
      cluster,
      reason: `labelled ${LABEL_GUEST_CLUSTER_NAME}=${cluster}, and Rancher has no Cluster of that name and no HarvesterMachine for this VM`,
    });
  }
  return scan;
}
