import { ownershipBar } from './guest-volumes.js';
import { LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import { usageIndex, type HostPvc, type PodLike } from './orphaned-volumes.js';
import type { VirtualMachine, VirtualMachineInstance } from './types.js';
import { keyText } from '../api/object-key.js';

export interface VolumeCleanupInput {
  cluster: string;
  namespace: string;
  pvcs: readonly HostPvc[];
  vms: readonly VirtualMachine[];
  vmis: readonly VirtualMachineInstance[];
  /** undefined when pods could not be listed: then nothing is deleted (a pod may use any of them). */
  pods: readonly PodLike[] | undefined;
  /** Host PVC names of this namespace that live guest clusters' PVs name, with who names them. */
  liveClaims: ReadonlyMap<string, readonly string[]>;
}

export interface VolumeItem {
  name: string;
  uid?: string;
  reason: string;
}

export type VolumeCleanupDecision =
  | { action: 'wait'; reason: string }
  | { action: 'refuse'; reason: string }
  | { action: 'delete'; volumes: VolumeItem[]; kept: VolumeItem[] };

/**
 * The host volumes of a guest cluster deleted as a whole that go once its last VM is gone:
 * the PVCs of the VMs' namespace recorded for the cluster (labelled `guestcluster.harvesterhci.io/name=<cluster>`, by the CSI driver
 * of harvester-csi-driver#65 or by the cleanup controller from the guest's own PVs). The VMs'
 * removals already deleted what they could (boot disks, hot-plugged volumes, labelled volumes
 * no other VM used); this deletes what is left, with rules no input can override:
 * - nothing while any VM of the cluster is left in the namespace (also one being deleted);
 * - never a PVC of another namespace, nor one not recorded for this cluster (another
 *   cluster's label, or none);
 * - never a PVC still used by any VM (volumes, volume claim templates), VM instance (volumes,
 *   volume status) or pod, of any guest cluster or none;
 * - never a PVC that a PersistentVolume of a live guest cluster names (recorded for a live
 *   cluster, whatever its label says);
 * - never a PVC whose ownership Harvester does not show as this cluster's alone: more than one
 *   guest cluster ever named it, or its claim was not corroborated, or an earlier controller
 *   recorded it on the guest's word alone (guest-volumes.ts ownershipBar);
 * - never one already being deleted (it goes anyway).
 * Pure: the controller lists and deletes (src/controller/deleted-clusters/volume-cleanup.ts).
 */
export function decideVolumeCleanup(input: VolumeCleanupInput): VolumeCleanupDecision {
  const { cluster, namespace } = input;
  if (cluster === '') return { action: 'refuse', reason: 'a guest cluster without a name owns no volumes' };
  const left = input.vms.filter(
    (v) => v.metadata.namespace === namespace && v.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === cluster,
  );
  if (left.length > 0)
    return {
      action: 'wait',
      reason: `${left.length} VM(s) of guest cluster ${cluster} are left in ${namespace} (${left
        .map((v) => v.metadata.name)
        .sort()
        .join(', ')})`,
    };
  if (input.pods === undefined)
    return {
      action: 'refuse',
      reason: `the pods of ${namespace} could not be listed, so whether a pod uses a volume is unknown: none is deleted`,
    };
  const usage = usageIndex({ vms: input.vms, vmis: input.vmis, pods: input.pods });
  const volumes: VolumeItem[] = [];
  const kept: VolumeItem[] = [];
  const recorded = input.pvcs
    .filter(
      (p) => p.metadata.namespace === namespace && p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === cluster,
    )
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  // A listing that holds a name twice (stale or merged) is decided by its least certain entry.
  const sameName = (name: string) =>
    input.pvcs.filter((p) => p.metadata.namespace === namespace && p.metadata.name === name);
  for (const pvc of recorded) {
    const { name, uid } = pvc.metadata;
    const item = (reason: string): VolumeItem => ({ name, ...(uid ? { uid } : {}), reason });
    if (pvc.metadata.deletionTimestamp) continue;
    const entries = sameName(name);
    if (
      entries.some(
        (p) => p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] !== cluster || p.metadata.deletionTimestamp,
      )
    ) {
      if (!kept.some((k) => k.name === name))
        kept.push(item('listed twice, not both recorded for this cluster: left alone'));
      continue;
    }
    if (volumes.some((v) => v.name === name)) continue;
    const users = usage.get(keyText(namespace, name));
    if (users?.length) {
      kept.push(item(`still used by ${users.join('; ')}`));
      continue;
    }
    const claimedBy = input.liveClaims.get(name);
    if (claimedBy?.length) {
      kept.push(item(`named by ${claimedBy.join(', ')}, of a guest cluster that is not deleted`));
      continue;
    }
    const bar = entries.map((p) => ownershipBar(p, cluster)).find((b) => b !== undefined);
    if (bar !== undefined) {
      kept.push(item(bar));
      continue;
    }
    volumes.push(
      item(
        `recorded for guest cluster ${cluster} (${LABEL_GUEST_CLUSTER_NAME}=${cluster}); no VM of it is left and nothing uses it`,
      ),
    );
  }
  return { action: 'delete', volumes, kept };
}
