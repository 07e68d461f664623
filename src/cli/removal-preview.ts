// `rm --dry-run`: the driver's removal plan (the one the real removal records on the VM)
// as a list of objects a person or a script can check: what goes, what stays, and why.
import { ANNOTATION_REMOVE_ALL_PVCS } from '../harvester/labels.js';
import type { PlannedItem, RemovalPlan } from '../harvester/removal-plan.js';

export interface PreviewItem {
  namespace: string;
  name: string;
  reason: string;
}

export interface RemovalPreview {
  machine: string;
  vm: { namespace: string; name: string; exists: boolean };
  /** Whether every volume of the guest cluster goes (Rancher's annotation, or --whole-cluster). */
  wholeCluster: boolean;
  /** True when --whole-cluster asked to preview as if the annotation were set. */
  wholeClusterAssumed: boolean;
  delete: { virtualMachines: PreviewItem[]; persistentVolumeClaims: PreviewItem[]; secrets: PreviewItem[] };
  keep: { persistentVolumeClaims: PreviewItem[] };
  /** Claim names the VM uses that name no PVC of its namespace: never deleted, shown as written. */
  refused: { claimNames: PreviewItem[] };
}

/** A kept item outside the VM's namespace is named "ns/name" by the plan. */
function item(namespace: string, planned: PlannedItem): PreviewItem {
  const slash = planned.name.indexOf('/');
  return slash > 0
    ? { namespace: planned.name.slice(0, slash), name: planned.name.slice(slash + 1), reason: planned.reason }
    : { namespace, name: planned.name, reason: planned.reason };
}

function vmReason(plan: RemovalPlan, assumed: boolean): string {
  const scope = plan.removeAll
    ? assumed
      ? `as if the whole guest cluster were deleted (--whole-cluster: ${ANNOTATION_REMOVE_ALL_PVCS}="true" assumed)`
      : `the whole guest cluster is being deleted (Rancher set ${ANNOTATION_REMOVE_ALL_PVCS}="true")`
    : 'only this machine is removed (a node replaced or scaled down)';
  return `the machine's VM, deleted with Foreground propagation (its VM instance goes with it); ${scope}`;
}

export function removalPreview(input: {
  machine: string;
  namespace: string;
  vmName: string;
  plan: RemovalPlan | undefined;
  wholeClusterAssumed: boolean;
}): RemovalPreview {
  const { plan } = input;
  const empty = { virtualMachines: [], persistentVolumeClaims: [], secrets: [] };
  if (!plan) {
    return {
      machine: input.machine,
      vm: { namespace: input.namespace, name: input.vmName, exists: false },
      wholeCluster: input.wholeClusterAssumed,
      wholeClusterAssumed: input.wholeClusterAssumed,
      delete: empty,
      keep: { persistentVolumeClaims: [] },
      refused: { claimNames: [] },
    };
  }
  const ns = plan.namespace;
  return {
    machine: input.machine,
    vm: { namespace: ns, name: plan.vmName, exists: true },
    wholeCluster: plan.removeAll,
    wholeClusterAssumed: input.wholeClusterAssumed,
    delete: {
      virtualMachines: [
        { namespace: ns, name: plan.vmName, reason: vmReason(plan, input.wholeClusterAssumed) },
      ],
      persistentVolumeClaims: plan.pvcs.map((p) => item(ns, p)),
      secrets: plan.secrets.map((s) => item(ns, s)),
    },
    keep: { persistentVolumeClaims: plan.kept.map((k) => item(ns, k)) },
    // Not item(): a refused name is the VM's text, and a "/" in it is no namespace.
    refused: { claimNames: plan.refused.map((r) => ({ namespace: ns, name: r.name, reason: r.reason })) },
  };
}

function section(title: string, kind: string, items: readonly PreviewItem[]): string[] {
  if (items.length === 0) return [];
  return [title, ...items.flatMap((i) => [`  ${kind} ${i.namespace}/${i.name}`, `      why: ${i.reason}`])];
}

export function renderRemovalPreview(preview: RemovalPreview, storeDir: string): string[] {
  const vm = `${preview.vm.namespace}/${preview.vm.name}`;
  const header = `Dry run: removing machine ${preview.machine} would`;
  if (!preview.vm.exists) {
    return [
      `${header} delete nothing on Harvester: VM ${vm} does not exist.`,
      `It would only forget the machine (${storeDir}).`,
    ];
  }
  const deletes = [
    ...section('delete:', 'VirtualMachine', preview.delete.virtualMachines),
    ...section('', 'PersistentVolumeClaim', preview.delete.persistentVolumeClaims).slice(1),
    ...section('', 'Secret', preview.delete.secrets).slice(1),
  ];
  const keeps = section('keep:', 'PersistentVolumeClaim', preview.keep.persistentVolumeClaims);
  const refused = preview.refused.claimNames;
  const refusals =
    refused.length === 0
      ? []
      : [
          'refuse (claim names of the VM that are no PVC of its namespace):',
          ...refused.map((r) => `  ${r.reason}`),
        ];
  const counts =
    `${preview.delete.persistentVolumeClaims.length} volume(s) and ${preview.delete.secrets.length} Secret(s) deleted, ` +
    `${preview.keep.persistentVolumeClaims.length} volume(s) kept` +
    (refused.length > 0 ? `, ${refused.length} claim name(s) refused` : '');
  return [
    `${header}`,
    ...deletes,
    ...keeps,
    ...refusals,
    `and forget the machine (${storeDir}). ${counts}. Nothing was changed.`,
  ];
}
