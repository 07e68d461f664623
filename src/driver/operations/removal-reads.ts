import {
  wantsRemoveAllPvcs,
  type HarvesterDeleteAnswer,
  type RemovalInputs,
} from '../../harvester/removal-plan.js';
import {
  beyondClusterCandidates,
  claimsToRead,
  guestClusterSelector,
  harvesterGuardsVolumes,
  type BeyondClusterInputs,
  type DeleteAnswer,
  type ListRead,
} from '../../harvester/removal-scope.js';
import type { PersistentVolumeClaim, VirtualMachine, VirtualMachineInstance } from '../../harvester/types.js';

/** Reads in the machine's namespace. */
export interface RemovalReader {
  findVm(name: string): Promise<VirtualMachine | undefined>;
  findVmi(name: string): Promise<VirtualMachineInstance | undefined>;
  findPvc(name: string): Promise<PersistentVolumeClaim | undefined>;
  /** The namespace's VMs; with a label selector, only those it selects. */
  listVms(labelSelector?: string, read?: ListRead): Promise<VirtualMachine[]>;
  listPvcs(labelSelector: string): Promise<PersistentVolumeClaim[]>;
  /**
   * Would the apiserver, with its admission webhooks, delete this PVC (this uid) now? A dry-run
   * delete: nothing changes. Without it every VM of the namespace is read instead.
   */
  askToDeletePvc?(pvc: PersistentVolumeClaim): Promise<DeleteAnswer>;
}

export interface RemovalTarget {
  /** The VM's name (the machine's). */
  name: string;
  /** The guest cluster (ClusterName); "" for a machine outside one. */
  clusterName: string;
}

/**
 * The VMs whose use protects a PVC: the guest cluster's, or the namespace's without one or
 * when `wide` (the leftovers of a whole-cluster removal).
 */
export function readProtectingVms(
  reader: RemovalReader,
  clusterName: string,
  read: ListRead = 'consistent',
  wide = false,
): Promise<VirtualMachine[]> {
  const selector = wide ? undefined : guestClusterSelector(clusterName);
  return selector === undefined ? reader.listVms(undefined, read) : reader.listVms(selector, read);
}

/**
 * Completes the protection of a whole-cluster removal beyond its cluster's VMs (`inputs.vms`):
 * asks Harvester about each candidate PVC not asked yet (beyondClusterCandidates) and keeps
 * the cluster's VMs when every answer is a clear yes or no; otherwise lists every VM of the
 * namespace (`read` as the cluster's list was), and then no answer is needed.
 */
export async function protectBeyondCluster(
  reader: RemovalReader,
  inputs: BeyondClusterInputs & Pick<RemovalInputs, 'harvesterAnswers'>,
  read: ListRead,
): Promise<Pick<RemovalInputs, 'vms' | 'harvesterAnswers'>> {
  const known = inputs.harvesterAnswers;
  const candidates = beyondClusterCandidates(inputs);
  const unasked = candidates.filter((p) => !known?.has(p.metadata.name));
  if (unasked.length === 0) return { vms: inputs.vms, ...(known ? { harvesterAnswers: known } : {}) };
  const ask = reader.askToDeletePvc?.bind(reader);
  if (ask && harvesterGuardsVolumes(inputs.vm)) {
    const answers = await Promise.all(unasked.map((p) => ask(p)));
    const clear = answers.filter((a): a is HarvesterDeleteAnswer => a.kind !== 'unknown');
    if (clear.length === answers.length) {
      const harvesterAnswers = new Map(known);
      unasked.forEach((p, i) => harvesterAnswers.set(p.metadata.name, clear[i] as HarvesterDeleteAnswer));
      return { vms: inputs.vms, harvesterAnswers };
    }
  }
  return { vms: await reader.listVms(undefined, read) };
}

export interface RemovalReadOptions {
  /** Applied to the VM before planning (the dry run's "as if the whole cluster went"). */
  adjust?: (vm: VirtualMachine) => VirtualMachine;
  /**
   * How the protecting VMs are listed (default consistent). Any other read also gets the
   * machine's VM by name: the plan's record is guarded by that copy's resourceVersion.
   */
  vmsRead?: ListRead;
}

/**
 * Reads what the plan needs; undefined when the VM does not exist (any more).
 *
 * What a removal reads to plan (removal-plan.ts), chosen so that its cost follows the machine
 * and its guest cluster, never the number of VMs and PVCs around it:
 * - the VM and its instance, by name;
 * - each PVC the VM or its instance names, by name (a name that can be no PVC's is not read:
 *   the plan refuses it);
 * - for a whole-cluster removal, the PVCs labelled guestcluster.harvesterhci.io/name=<cluster>;
 * - as the other VMs whose use of a PVC keeps it: the VMs labelled for the same guest cluster
 *   (that list holds the machine's own VM too, so it is also how the VM is found). A machine
 *   outside a guest cluster, or whose cluster name no label can hold, is checked against every
 *   VM of its namespace, as before: no label bounds who may use its disks.
 * - a whole-cluster removal that would delete a labelled PVC none of the cluster's VMs names
 *   (a volume attached to nothing, or hot-plugged into a VM outside the cluster) asks Harvester
 *   about each such PVC: a dry-run delete, which its PVC webhook answers from its own index of
 *   the VMs that name a PVC. A refusal keeps the PVC. Only where Harvester's VM controller
 *   handles the VM (its cleanup finalizer is on it) is that answer taken; without the finalizer,
 *   or when any answer is no clear yes or no, every VM of the namespace is checked instead: the
 *   label says whose the volume is, not who uses it.
 * What is given up: a VM outside the guest cluster that uses one of the cluster's VMs' own
 * disks is not seen here. Harvester's own PVC webhook refuses to delete a PVC that a VM not
 * being deleted names as a claim (every release: by its VM index, before v1.4.0 by the
 * owned-by annotation), so that case costs a stalled removal, not data
 * (docs/upstream/harvester-kubevirt.md#pvc-deletion-webhook). The webhook does not count a
 * VM that is itself being deleted, nor one that names the PVC as a DataVolume.
 * Every read goes through the RemovalReader the caller gives; the pure choices of what to read
 * are src/harvester/removal-scope.ts's.
 */
export async function readForRemoval(
  reader: RemovalReader,
  target: RemovalTarget,
  opts: RemovalReadOptions = {},
): Promise<RemovalInputs | undefined> {
  const read = opts.vmsRead ?? 'consistent';
  const [clusterVms, vmi, byName] = await Promise.all([
    readProtectingVms(reader, target.clusterName, read),
    reader.findVmi(target.name),
    read === 'consistent' ? undefined : reader.findVm(target.name),
  ]);
  // Unlabelled (made before the label, or the label removed): found by name.
  const found =
    read === 'consistent'
      ? (clusterVms.find((v) => v.metadata.name === target.name) ?? (await reader.findVm(target.name)))
      : byName;
  if (!found) return undefined;
  const vm = opts.adjust ? opts.adjust(found) : found;
  const removeAll = wantsRemoveAllPvcs(vm);
  const selector = guestClusterSelector(target.clusterName);
  const [named, labelled] = await Promise.all([
    Promise.all(claimsToRead(vm, vmi).map((name) => reader.findPvc(name))),
    removeAll && selector !== undefined ? reader.listPvcs(selector) : Promise.resolve([]),
  ]);
  // Both reads of a PVC both named and labelled stay: a label changed in between counts either way.
  const pvcs = [...named.filter((p): p is PersistentVolumeClaim => p !== undefined), ...labelled];
  const base = { vm, pvcs, removeAll, clusterName: target.clusterName };
  const protection = await protectBeyondCluster(reader, { ...base, vms: clusterVms }, read);
  return { ...base, ...(vmi ? { vmi } : {}), ...protection };
}
