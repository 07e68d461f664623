import { ANNOTATION_REMOVE_ALL_PVCS, LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import { describeRecord, ownershipBar } from './guest-volumes.js';
import { cloudInitSecretName } from './names.js';
import type {
  PersistentVolumeClaim,
  Secret,
  VirtualMachine,
  VirtualMachineInstance,
  VMIVolumeStatus,
  Volume,
} from './types.js';
import { keyText, keyTextOf } from '../api/object-key.js';

export interface RemovalInputs {
  vm: VirtualMachine;
  vmi?: VirtualMachineInstance;
  /**
   * The PVCs the removal read (removal-scope.ts): each one the VM names, and for a whole-cluster
   * removal those labelled for its cluster. A claim with no entry here names no PVC and is
   * refused; entries of other namespaces are never deleted.
   */
  pvcs: readonly PersistentVolumeClaim[];
  /**
   * The VMs whose use of a PVC protects it, the VM itself included or not: the guest
   * cluster's, or every VM of the namespace for a machine outside one (removal-scope.ts).
   */
  vms: readonly VirtualMachine[];
  removeAll: boolean;
  /** The guest cluster the machine belongs to (ClusterName); "" for a machine outside one. */
  clusterName: string;
  /** When given, only referenced Secrets that the VM owns are listed; else the `<vm>-cloudinit` one. */
  secretsInNamespace?: readonly Secret[];
  /**
   * What Harvester answered, per PVC name, when asked whether it would delete the PVC now
   * (removal-scope.ts): a PVC it would refuse is kept, with its words as the reason.
   */
  harvesterAnswers?: ReadonlyMap<string, HarvesterDeleteAnswer>;
}

/** Harvester's answer to a dry-run delete of a PVC: its PVC webhook let it go, or refused (and why). */
export type HarvesterDeleteAnswer = { kind: 'allowed' } | { kind: 'refused'; reason: string };

export interface PlannedItem {
  name: string;
  reason: string;
}

export interface RemovalPlan {
  vmName: string;
  namespace: string;
  removeAll: boolean;
  /** PVCs to delete (the removedPersistentVolumeClaims annotation), in the VM's namespace. */
  pvcs: PlannedItem[];
  /** PVCs considered and left alone. */
  kept: PlannedItem[];
  /** Claim names the VM uses that name no PVC of its namespace (invalid or missing): never planned. */
  refused: PlannedItem[];
  /** Secrets that go with the VM (owned by it; the garbage collector deletes them). */
  secrets: PlannedItem[];
}

/** Kubernetes' rule for PVC names (metadata.name of a PersistentVolumeClaim). */
const DNS1123_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
const MAX_PVC_NAME = 253;

/** Why a claim name can be no PVC's name; undefined when it can be one. */
export function claimNameProblem(name: string): string | undefined {
  if (name.length > MAX_PVC_NAME) return `longer than ${MAX_PVC_NAME} characters`;
  if (!DNS1123_SUBDOMAIN.test(name)) {
    return "not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.'; no comma or space)";
  }
  return undefined;
}

/** A name from a VM's spec as it can be shown: quoted, control characters escaped, cut short. */
function shown(name: string): string {
  const quoted = JSON.stringify(name);
  return quoted.length > 300 ? `${quoted.slice(0, 260)}…" (${name.length} characters)` : quoted;
}

/** Rancher's whole-cluster signal, compared as the Go driver does (exactly "true"). */
export function wantsRemoveAllPvcs(vm: VirtualMachine): boolean {
  return vm.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS] === 'true';
}

interface OwnClaim {
  claimName: string;
  volumeName: string;
  hotplugged: boolean;
}

/** The PVCs a VM's volumes use; for protection, DataVolumes count too (their PVC has their name). */
export function referencedClaims(volumes: readonly Volume[] | undefined): string[] {
  const names: string[] = [];
  for (const v of volumes ?? []) {
    if (v.persistentVolumeClaim?.claimName) names.push(v.persistentVolumeClaim.claimName);
    if (v.dataVolume?.name) names.push(v.dataVolume.name);
  }
  return names;
}

/**
 * The VM's PVC volumes, with hot-plug state from every source there is: the VM template,
 * the VMI spec (older Harvester hot-plugs through the VMI only) and the VMI's volume
 * status. Any one of them saying "hot-plugged" is enough: when unsure, keep the data.
 */
function ownClaims(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): OwnClaim[] {
  const byClaim = new Map<string, OwnClaim>();
  const add = (v: Volume): void => {
    const pvc = v.persistentVolumeClaim;
    if (!pvc?.claimName) return;
    const known = byClaim.get(pvc.claimName);
    if (known) known.hotplugged ||= pvc.hotpluggable === true;
    else
      byClaim.set(pvc.claimName, {
        claimName: pvc.claimName,
        volumeName: v.name,
        hotplugged: pvc.hotpluggable === true,
      });
  };
  const volumes = [...(vm.spec.template.spec.volumes ?? []), ...(vmi?.spec?.volumes ?? [])];
  volumes.forEach(add);
  const hotEntries = (vmi?.status?.volumeStatus ?? []).filter((s) => s.hotplugVolume);
  for (const status of hotEntries) {
    for (const claimName of claimsOfStatusEntry(status, volumes)) {
      const claim = byClaim.get(claimName);
      if (claim) claim.hotplugged = true;
      else byClaim.set(claimName, { claimName, volumeName: status.name, hotplugged: true });
    }
  }
  // A DataVolume's PVC has its name. DataVolumes are never planned (the Go driver leaves them
  // alone), but one that is hot-plugged makes a claim of the same name hot-plugged too.
  const hotNames = new Set(hotEntries.map((s) => s.name));
  for (const v of volumes) {
    const claim = v.dataVolume ? byClaim.get(v.dataVolume.name) : undefined;
    if (claim && (v.dataVolume?.hotpluggable === true || hotNames.has(v.name))) claim.hotplugged = true;
  }
  return [...byClaim.values()];
}

/**
 * The claims a VMI volume-status entry can mean. It is about the VMI's volume of that name,
 * but a template edited since the VMI started can give the name another claim: all count.
 */
function claimsOfStatusEntry(status: VMIVolumeStatus, volumes: readonly Volume[]): Set<string> {
  const claimNames = new Set<string>();
  for (const v of volumes) {
    if (v.name === status.name && v.persistentVolumeClaim?.claimName)
      claimNames.add(v.persistentVolumeClaim.claimName);
  }
  if (status.persistentVolumeClaimInfo?.claimName) claimNames.add(status.persistentVolumeClaimInfo.claimName);
  return claimNames;
}

function ownedSecrets(inputs: RemovalInputs, namespace: string): PlannedItem[] {
  const { vm } = inputs;
  const referenced = new Set<string>();
  for (const v of vm.spec.template.spec.volumes ?? []) {
    for (const source of [v.cloudInitNoCloud, v.cloudInitConfigDrive]) {
      if (source?.secretRef?.name) referenced.add(source.secretRef.name);
      if (source?.networkDataSecretRef?.name) referenced.add(source.networkDataSecretRef.name);
    }
  }
  const owned = (name: string): boolean => {
    if (!inputs.secretsInNamespace) return name === cloudInitSecretName(vm.metadata.name);
    const secret = inputs.secretsInNamespace.find(
      (s) => s.metadata.name === name && s.metadata.namespace === namespace,
    );
    return (secret?.metadata.ownerReferences ?? []).some(
      (o) =>
        o.kind === 'VirtualMachine' &&
        o.name === vm.metadata.name &&
        (!vm.metadata.uid || o.uid === vm.metadata.uid),
    );
  };
  return [...referenced].filter(owned).map((name) => ({
    name,
    reason: `cloud-init Secret owned by VM ${keyText(namespace, vm.metadata.name)}; the garbage collector deletes it with the VM`,
  }));
}

/**
 * Which volumes go when a machine is removed. This decides what data is destroyed, so it
 * is a pure function with the rules written out, and every PVC it leaves alone is listed
 * with the reason (for `rm --dry-run` and the log).
 *
 * Rules (the facts behind them: docs/upstream/go-driver.md#removal-and-volumes):
 * - Plain removal (a node is replaced or scaled down): the VM's own boot/data volumes go;
 *   hot-plugged volumes (guest-cluster workload data, harvester#3272) stay.
 * - Whole guest cluster deleted (VM annotated removeAllPersistentVolumeClaims="true"):
 *   the hot-plugged volumes go too, and every PVC in the VM's namespace labelled
 *   guestcluster.harvesterhci.io/name=<cluster>.
 * - Never, whatever the rule above: a PVC in another namespace, a PVC labelled for another
 *   guest cluster, or a PVC that another existing VM of the inputs still references (which
 *   VMs the removal reads, and what that leaves to Harvester: removal-scope.ts).
 * - Never a PVC Harvester said it would refuse to delete when it was asked (a dry-run delete
 *   through its PVC webhook: removal-scope.ts); its answer is the reason kept.
 * - Never, on a whole-cluster removal, a hot-plugged or labelled volume whose ownership is not
 *   this cluster's alone as Harvester shows it: more than one guest cluster ever named it, its
 *   claim was not corroborated, or an earlier controller recorded it on a guest's word alone
 *   (guest-volumes.ts ownershipBar). The VM's own boot and data disks are the VM's.
 * - Never a name that is not a PVC of the VM's namespace: a claim name that is no valid PVC
 *   name (a DNS-1123 subdomain) or that no PVC there has is refused, with the reason.
 * Harvester deletes the PVCs named in the removedPersistentVolumeClaims annotation, in the
 * VM's namespace, once the VM is gone; the plan is that annotation's content. Harvester
 * splits it on `,` (and trims): a claim name "a,b" written as is would delete PVCs a and b,
 * whoever uses them, which is why only names that exist, and so cannot hold a comma, go in.
 */
export function planRemoval(inputs: RemovalInputs): RemovalPlan {
  const { vm, removeAll, clusterName } = inputs;
  const vmName = vm.metadata.name;
  const namespace = vm.metadata.namespace ?? '';
  const vmRef = keyText(namespace, vmName);
  const plan: RemovalPlan = {
    vmName,
    namespace,
    removeAll,
    pvcs: [],
    kept: [],
    refused: [],
    secrets: ownedSecrets(inputs, namespace),
  };

  // Guest-cluster labels of the namespace's PVCs by name (a list: a stale or merged listing
  // could hold a name twice, and then any foreign label is enough to keep it).
  const clusterLabels = new Map<string, Array<string | undefined>>();
  for (const pvc of inputs.pvcs) {
    if (pvc.metadata.namespace !== namespace) continue;
    const labels = clusterLabels.get(pvc.metadata.name) ?? [];
    labels.push(pvc.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME]);
    clusterLabels.set(pvc.metadata.name, labels);
  }
  const usedBy = new Map<string, string[]>();
  for (const other of inputs.vms) {
    if (other.metadata.namespace !== namespace || other.metadata.name === vmName) continue;
    for (const claim of new Set(referencedClaims(other.spec.template.spec.volumes))) {
      usedBy.set(claim, [...(usedBy.get(claim) ?? []), other.metadata.name]);
    }
  }

  const decided = new Set<string>();
  const keep = (name: string, reason: string): void => {
    decided.add(name);
    plan.kept.push({ name, reason });
  };
  const refuse = (name: string, why: string): void => {
    decided.add(name);
    plan.refused.push({ name, reason: `claim name ${shown(name)} ${why}; never deleted` });
  };
  /** The checks no rule can override; then the PVC goes. */
  const remove = (name: string, reason: string, guestVolume = false): void => {
    if (decided.has(name)) return;
    const problem = claimNameProblem(name);
    if (problem !== undefined) return refuse(name, `is no PVC name: ${problem}`);
    if (!clusterLabels.has(name)) return refuse(name, `names no PVC in namespace ${namespace}`);
    if (guestVolume) {
      const bar = inputs.pvcs
        .filter((p) => p.metadata.namespace === namespace && p.metadata.name === name)
        .map((p) => ownershipBar(p, clusterName))
        .find((b) => b !== undefined);
      if (bar !== undefined) return keep(name, bar);
    }
    const users = usedBy.get(name);
    if (users) return keep(name, `still used by VM ${users.map((u) => keyText(namespace, u)).join(', ')}`);
    const answer = inputs.harvesterAnswers?.get(name);
    if (answer?.kind === 'refused')
      return keep(name, `Harvester refuses to delete it: ${shown(answer.reason)}`);
    const owner = clusterLabels.get(name)?.find((label) => label !== undefined && label !== clusterName);
    if (owner !== undefined) {
      return keep(
        name,
        `labelled for guest cluster "${owner}", not ${clusterName ? `"${clusterName}"` : 'this machine'}`,
      );
    }
    decided.add(name);
    plan.pvcs.push({ name, reason });
  };

  for (const claim of ownClaims(vm, inputs.vmi)) {
    const problem = claimNameProblem(claim.claimName);
    if (problem !== undefined) {
      refuse(claim.claimName, `is no PVC name: ${problem}`);
    } else if (!claim.hotplugged) {
      remove(claim.claimName, `boot/data disk ${claim.volumeName} of VM ${vmRef}`);
    } else if (removeAll) {
      remove(
        claim.claimName,
        `hot-plugged volume of VM ${vmRef}; the whole guest cluster is being deleted`,
        true,
      );
    } else if (!decided.has(claim.claimName)) {
      keep(
        claim.claimName,
        'hot-plugged volume (guest workload data): kept when only this machine is removed, ' +
          'deleted when the whole guest cluster is',
      );
    }
  }

  // An empty cluster name would select every PVC labelled with an empty value: select none.
  if (removeAll && clusterName !== '') {
    const labelled = inputs.pvcs
      .filter((p) => p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === clusterName)
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    for (const pvc of labelled) {
      if (pvc.metadata.namespace !== namespace) {
        plan.kept.push({
          name: keyTextOf(pvc),
          reason: `in namespace ${pvc.metadata.namespace ?? '(none)'}, not the VM's namespace ${namespace}`,
        });
        continue;
      }
      // The cleanup controller's record says which guest volume it is (guest-volumes.ts).
      const record = describeRecord(pvc);
      remove(
        pvc.metadata.name,
        `labelled ${LABEL_GUEST_CLUSTER_NAME}=${clusterName}${record ? ` (${record})` : ''}; the whole guest cluster is being deleted`,
        true,
      );
    }
  }
  return plan;
}

/** The removedPersistentVolumeClaims annotation value: the planned PVC names, comma-joined. */
export function removedPvcsAnnotationValue(plan: RemovalPlan): string {
  const names = plan.pvcs.map((p) => p.name);
  // The plan holds only names of existing PVCs; a name that could split is a bug, not input.
  const bad = names.find((n) => claimNameProblem(n) !== undefined);
  if (bad !== undefined) throw new Error(`refusing to record PVC name ${shown(bad)}: it is no PVC name`);
  return names.join(',');
}
