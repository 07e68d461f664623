// The pure side of what a removal reads (the reads themselves: src/driver/operations/
// removal-reads.ts): which VMs and PVCs bound a removal, which claim names are worth reading,
// and which PVCs only Harvester's PVC webhook can vouch for. No I/O.
import {
  claimNameProblem,
  referencedClaims,
  type HarvesterDeleteAnswer,
  type RemovalInputs,
} from './removal-plan.js';
import { FINALIZER_HARVESTER_VM_CLEANUP, LABEL_GUEST_CLUSTER_NAME, isValidLabelValue } from './labels.js';
import type { PersistentVolumeClaim, VirtualMachine, VirtualMachineInstance } from './types.js';

/**
 * How fresh a list must be: "consistent" (everything written before it; before Kubernetes 1.31,
 * or beside an etcd older than 3.4.31, read from etcd, the whole collection decoded to apply
 * the selector), "cached" (the apiserver's watch cache as it is: maybe a moment behind), or not
 * older than a revision (from the cache once it has seen it; a revision of a write of this
 * resource, or the cache may wait seconds and refuse: docs/upstream/control-plane.md).
 */
export type ListRead = 'consistent' | 'cached' | { notOlderThan: string };

/** Harvester's answer to a dry-run delete, or none to rely on (an error, the PVC replaced meanwhile). */
export type DeleteAnswer = HarvesterDeleteAnswer | { kind: 'unknown' };

/**
 * The label selector of a guest cluster's VMs and PVCs; undefined when there is none to
 * select by: no cluster, or a name no label value can be (nothing can carry it as a label).
 */
export function guestClusterSelector(clusterName: string): string | undefined {
  if (clusterName === '' || !isValidLabelValue(clusterName)) return undefined;
  return `${LABEL_GUEST_CLUSTER_NAME}=${clusterName}`;
}

/**
 * Every claim name the plan can decide about: the VM template's and its instance's PVC
 * volumes and the claims its instance's volume status names (a hot-plug known only there).
 * Only names a PVC can have: another is refused by the plan, and is never put into a path.
 */
export function claimsToRead(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): string[] {
  const names = new Set<string>();
  for (const v of [...(vm.spec.template.spec.volumes ?? []), ...(vmi?.spec?.volumes ?? [])]) {
    if (v.persistentVolumeClaim?.claimName) names.add(v.persistentVolumeClaim.claimName);
  }
  for (const s of vmi?.status?.volumeStatus ?? []) {
    if (s.persistentVolumeClaimInfo?.claimName) names.add(s.persistentVolumeClaimInfo.claimName);
  }
  return [...names].filter((n) => claimNameProblem(n) === undefined);
}

export type BeyondClusterInputs = Pick<RemovalInputs, 'vm' | 'vms' | 'pvcs' | 'removeAll' | 'clusterName'>;

/**
 * The PVCs whose users this whole-cluster removal cannot know from its cluster's VMs: those it
 * would delete, labelled for the cluster, that neither the machine's VM nor any VM of the
 * cluster names. Whoever uses such a volume (if anyone) is outside the cluster.
 */
export function beyondClusterCandidates(inputs: BeyondClusterInputs): PersistentVolumeClaim[] {
  if (!inputs.removeAll || guestClusterSelector(inputs.clusterName) === undefined) return [];
  const named = new Set(
    [inputs.vm, ...inputs.vms]
      .filter((v) => v === inputs.vm || v.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === inputs.clusterName)
      .flatMap((v) => referencedClaims(v.spec.template.spec.volumes)),
  );
  const seen = new Set<string>();
  return inputs.pvcs.filter((p) => {
    const name = p.metadata.name;
    if (p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] !== inputs.clusterName || named.has(name)) return false;
    if (seen.has(name)) return false;
    seen.add(name);
    return true;
  });
}

/**
 * Harvester's VM controller handles this VM (its cleanup finalizer is on it): the Harvester
 * whose PVC webhook answers a dry-run delete is there. Without it a yes proves nothing.
 */
export function harvesterGuardsVolumes(vm: VirtualMachine): boolean {
  return (vm.metadata.finalizers ?? []).includes(FINALIZER_HARVESTER_VM_CLEANUP);
}
