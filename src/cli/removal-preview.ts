// `rm --dry-run`: the driver's removal plan (the one the real removal records on the VM)
// as a list of objects a person or a script can check: what goes, what stays, and why.
import { ANNOTATION_REMOVE_ALL_PVCS, LABEL_GUEST_CLUSTER_NAME } from '../harvester/labels.js';
import {
  describeLoadBalancer,
  guestClusterLoadBalancers,
  harvesterLbCleanup,
  isAmbiguousClusterName,
  type LoadBalancer,
} from '../harvester/load-balancers.js';
import type { ObjectMeta } from '../harvester/types.js';
import type { PlannedItem, RemovalPlan } from '../harvester/removal-plan.js';
import { keyText } from '../api/object-key.js';

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
  delete: {
    virtualMachines: PreviewItem[];
    persistentVolumeClaims: PreviewItem[];
    secrets: PreviewItem[];
    /** With the whole guest cluster, once its last VM is gone (not by this removal itself). */
    loadBalancers?: PreviewItem[];
  };
  keep: { persistentVolumeClaims: PreviewItem[]; loadBalancers?: PreviewItem[] };
  /** Claim names the VM uses that name no PVC of its namespace: never deleted, shown as written. */
  refused: { claimNames: PreviewItem[] };
  /** Why the guest cluster's load balancers could not be looked at. */
  loadBalancersNotListed?: string;
}

/** What the driver read beside the VM (HarvesterDriver.clusterLoadBalancers). */
export type LoadBalancerView =
  | {
      loadBalancers: LoadBalancer[];
      vms: Array<{ metadata: Partial<ObjectMeta> }>;
      serverVersion: string | undefined;
    }
  | { notListed: string };

/**
 * The guest cluster's load balancers in the VM's namespace: on a whole-cluster removal they
 * go once the cluster's last VM is gone, by Harvester itself from v1.8.0, else by the cleanup
 * controller; on any other removal they stay. Never by the driver's removal of one VM.
 */
export function loadBalancerPreview(input: {
  view: LoadBalancerView;
  cluster: string;
  namespace: string;
  vmName: string;
  wholeCluster: boolean;
}): Pick<RemovalPreview, 'loadBalancersNotListed'> & { delete?: PreviewItem[]; keep?: PreviewItem[] } {
  const { view, cluster, namespace } = input;
  if ('notListed' in view) return { loadBalancersNotListed: view.notListed };
  if (!cluster) return {};
  const lbs = guestClusterLoadBalancers(view.loadBalancers, cluster, namespace).filter(
    (lb) => !lb.metadata.deletionTimestamp,
  );
  const item = (lb: LoadBalancer, reason: string): PreviewItem => ({
    namespace: lb.metadata.namespace ?? namespace,
    name: lb.metadata.name,
    reason,
  });
  if (!input.wholeCluster || isAmbiguousClusterName(cluster)) {
    const why = input.wholeCluster
      ? `guest cluster name "${cluster}" names no cluster in particular: its load balancers are never deleted for it`
      : 'only this machine is removed: the guest cluster keeps its load balancers';
    return { keep: lbs.map((lb) => item(lb, `${describeLoadBalancer(lb)}; ${why}`)) };
  }
  const others = view.vms.filter(
    (v) =>
      v.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === cluster &&
      v.metadata.name !== input.vmName &&
      !v.metadata.deletionTimestamp,
  ).length;
  const version = harvesterLbCleanup(view.serverVersion);
  const by = version.cleansUp
    ? `by Harvester itself (${version.why})`
    : `by harvester-machine-controller (${version.why})`;
  const when = `deleted with guest cluster ${cluster} once its last VM is gone${others ? ` (${others} other VM(s) of it are left)` : ''}, ${by}; not by this removal`;
  return {
    delete: lbs.map((lb) =>
      item(lb, `made by the cluster's cloud provider: ${describeLoadBalancer(lb)}; ${when}`),
    ),
  };
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
  loadBalancers?: ReturnType<typeof loadBalancerPreview>;
}): RemovalPreview {
  const { plan } = input;
  const lb = input.loadBalancers;
  const lbFields = {
    ...(lb?.loadBalancersNotListed ? { loadBalancersNotListed: lb.loadBalancersNotListed } : {}),
  };
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
      ...lbFields,
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
      ...(lb?.delete ? { loadBalancers: lb.delete } : {}),
    },
    keep: {
      persistentVolumeClaims: plan.kept.map((k) => item(ns, k)),
      ...(lb?.keep ? { loadBalancers: lb.keep } : {}),
    },
    ...lbFields,
    // Not item(): a refused name is the VM's text, and a "/" in it is no namespace.
    refused: { claimNames: plan.refused.map((r) => ({ namespace: ns, name: r.name, reason: r.reason })) },
  };
}

function section(title: string, kind: string, items: readonly PreviewItem[]): string[] {
  if (items.length === 0) return [];
  return [
    title,
    ...items.flatMap((i) => [`  ${kind} ${keyText(i.namespace, i.name)}`, `      why: ${i.reason}`]),
  ];
}

export function renderRemovalPreview(preview: RemovalPreview, storeDir: string): string[] {
  const vm = keyText(preview.vm.namespace, preview.vm.name);
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
  const withCluster = section(
    'with the guest cluster, once its last VM is gone:',
    'LoadBalancer',
    preview.delete.loadBalancers ?? [],
  );
  const keeps = [
    ...section('keep:', 'PersistentVolumeClaim', preview.keep.persistentVolumeClaims),
    ...section(
      preview.keep.persistentVolumeClaims.length ? '' : 'keep:',
      'LoadBalancer',
      preview.keep.loadBalancers ?? [],
    ).slice(preview.keep.persistentVolumeClaims.length ? 1 : 0),
  ];
  const lbCount = preview.delete.loadBalancers?.length
    ? `, ${preview.delete.loadBalancers.length} load balancer(s) go with the guest cluster`
    : '';
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
    (refused.length > 0 ? `, ${refused.length} claim name(s) refused` : '') +
    lbCount;
  const notListed = preview.loadBalancersNotListed
    ? [`(load balancers not looked at: ${preview.loadBalancersNotListed})`]
    : [];
  return [
    `${header}`,
    ...deletes,
    ...withCluster,
    ...keeps,
    ...refusals,
    ...notListed,
    `and forget the machine (${storeDir}). ${counts}. Nothing was changed.`,
  ];
}
