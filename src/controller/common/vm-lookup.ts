// Where the VM of a HarvesterMachine is. Rancher's handler GETs the VM by the machine's
// name only and silently skips when it misses; names of 64+ characters were hashed by
// Rancher (SafeConcatName), so those VMs were never annotated. Order here: the plain name,
// the hashed name, then the VMs labelled for the guest cluster.
import { LABEL_GUEST_CLUSTER_NAME, LABEL_VM_NAME } from '../../harvester/labels.js';
import type { KubeObject } from '../../kube/resources.js';
import { rancherInstanceName } from '../../rancher/names.js';

/** Names to GET, in order. */
export function vmNameCandidates(machineName: string): string[] {
  return [...new Set([machineName, rancherInstanceName(machineName)])];
}

/** The label selector for the last resort: the VMs of this guest cluster. */
export function guestClusterSelector(clusterName: string): string {
  return `${LABEL_GUEST_CLUSTER_NAME}=${clusterName}`;
}

export type LabelMatch<T> =
  { kind: 'found'; vm: T; how: string } | { kind: 'none' } | { kind: 'ambiguous'; names: string[] };

/**
 * Among the guest cluster's VMs, the one of this machine: its `harvesterhci.io/vmName`
 * label names a candidate, or (for a long name hashed some other way) its name keeps the
 * first 56 characters of the machine name. More than one match is reported, never guessed:
 * annotating the wrong VM would delete another machine's volumes.
 */
export function matchVmByLabels<T extends KubeObject>(
  vms: readonly T[],
  machineName: string,
  clusterName: string,
): LabelMatch<T> {
  const candidates = new Set(vmNameCandidates(machineName));
  const ofCluster = vms.filter((v) => v.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === clusterName);
  const byLabel = ofCluster.filter((v) => candidates.has(v.metadata.labels?.[LABEL_VM_NAME] ?? ''));
  if (byLabel.length === 1 && byLabel[0])
    return { kind: 'found', vm: byLabel[0], how: `label ${LABEL_VM_NAME}` };
  if (byLabel.length > 1) return { kind: 'ambiguous', names: byLabel.map((v) => v.metadata.name) };
  if (machineName.length < 64) return { kind: 'none' };
  const prefix = machineName.replaceAll('.', '-').slice(0, 56);
  const byPrefix = ofCluster.filter((v) => v.metadata.name.startsWith(prefix));
  if (byPrefix.length === 1 && byPrefix[0])
    return { kind: 'found', vm: byPrefix[0], how: `name prefix ${prefix}` };
  if (byPrefix.length > 1) return { kind: 'ambiguous', names: byPrefix.map((v) => v.metadata.name) };
  return { kind: 'none' };
}
