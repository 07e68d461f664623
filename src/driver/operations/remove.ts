// Remove: decide with the pure removal plan which PVCs go, record them on the VM in
// `harvesterhci.io/removedPersistentVolumeClaims` (Harvester deletes exactly those when
// the VM goes), delete the VM with Foreground propagation and wait until it is gone.
// A VM already gone is success. The plan is recorded with an optimistic-lock patch, so
// a concurrent change (a volume hot-plugged meanwhile) makes us read and plan again.
// What is read to plan is removal-reads.ts's choice: the machine's objects and its guest
// cluster's, never every VM and PVC of the namespace. One reader serves a removal.
import { isConflict, isNotFound } from '../../kube/errors.js';
import {
  planRemoval,
  referencedClaims,
  removedPvcsAnnotationValue,
  wantsRemoveAllPvcs,
  type RemovalPlan,
} from '../../harvester/removal-plan.js';
import {
  readForRemoval,
  protectBeyondCluster,
  readProtectingVms,
  type RemovalReader,
  type RemovalReadOptions,
} from './removal-reads.js';
import { ANNOTATION_REMOVED_PVCS, FINALIZER_HARVESTER_VM_CLEANUP } from '../../harvester/labels.js';
import type { Vm } from '../../harvester-access/harvester-api.js';
import { vmRef, type OperationContext } from './context.js';
import { freeMachineClaims } from '../fixed-addresses/fixed-address.js';
import { waitVmGone } from './waits.js';
import { keyText } from '../../api/object-key.js';

const MAX_PLAN_ATTEMPTS = 5;

/** The removal's reads, in the machine's namespace: made once per removal. */
export function removalReader(ctx: OperationContext): RemovalReader {
  const ns = ctx.config.VMNamespace;
  return {
    findVm: (name) => ctx.api.findVm(ns, name),
    findVmi: (name) => ctx.api.findVmi(ns, name),
    findPvc: (name) => ctx.api.findPvc(ns, name),
    listVms: (labelSelector, read) => ctx.api.listVms(ns, labelSelector, read),
    // Consistent: a PVC's revision cannot be waited for in the VM cache.
    listPvcs: (labelSelector) => ctx.api.listPvcs(ns, labelSelector),
    askToDeletePvc: (pvc) => ctx.api.askToDeletePvc(ns, pvc),
  };
}

/**
 * Reads what the plan needs and makes it; no change on Harvester. Undefined when the VM does
 * not exist. The VM the plan was made from comes with it (its resourceVersion guards the record).
 */
export async function planMachineRemoval(
  ctx: OperationContext,
  opts: RemovalReadOptions = {},
): Promise<{ vm: Vm; plan: RemovalPlan } | undefined> {
  const planned = await readAndPlan(ctx, removalReader(ctx), opts);
  return planned && { vm: planned.inputs.vm, plan: planned.plan };
}

async function readAndPlan(ctx: OperationContext, reads: RemovalReader, opts: RemovalReadOptions) {
  const inputs = await readForRemoval(
    reads,
    { name: ctx.config.MachineName, clusterName: ctx.config.ClusterName },
    opts,
  );
  return inputs && { inputs, plan: planRemoval(inputs) };
}

/**
 * Plans and records the plan on the VM; reads and plans again when the VM changed meanwhile.
 * Undefined when the VM is gone (or went meanwhile: an earlier removal finished).
 *
 * The protecting VMs are first read from the apiserver's watch cache as it is (a consistent
 * list costs an apiserver before Kubernetes 1.31 every VM of the namespace read from etcd), so
 * the plan may miss a VM written a moment before. The record is a write of the machine's own
 * VM: once it is done the VMs are listed again "not older than" that write, which the VM cache
 * reaches at once, and which holds every VM written before the record. The plan made from that
 * list is the one kept; when it differs (a VM came to use a planned PVC) it is recorded instead,
 * and checked the same way.
 */
export async function recordPlan(
  ctx: OperationContext,
  reads: RemovalReader = removalReader(ctx),
): Promise<{ vm: Vm; plan: RemovalPlan } | undefined> {
  let planned = await readAndPlan(ctx, reads, { vmsRead: 'cached' });
  if (planned && wantsRemoveAllPvcs(planned.inputs.vm)) {
    ctx.log.info('Force the removal of all persistent volume claims');
  }
  for (let attempt = 1; planned; attempt++) {
    const { inputs, plan } = planned;
    const value = removedPvcsAnnotationValue(plan);
    let recorded: Vm;
    try {
      recorded = await ctx.api.patchVmAnnotations(inputs.vm, { [ANNOTATION_REMOVED_PVCS]: value });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err) || attempt >= MAX_PLAN_ATTEMPTS) throw err;
      planned = await readAndPlan(ctx, reads, { vmsRead: 'cached' }); // the VM changed: from the start
      continue;
    }
    // A record equal to what the VM had is no write (no new revision): then a consistent list.
    const revision = recorded.metadata.resourceVersion;
    const wrote = revision !== undefined && revision !== inputs.vm.metadata.resourceVersion;
    const read = wrote ? { notOlderThan: revision } : ('consistent' as const);
    const clusterVms = await readProtectingVms(reads, ctx.config.ClusterName, read);
    // Volumes no VM of the cluster names now: Harvester's earlier answers stand, new ones are asked.
    const protection = await protectBeyondCluster(reads, { ...inputs, vm: recorded, vms: clusterVms }, read);
    const checked = planRemoval({ ...inputs, vm: recorded, ...protection });
    if (removedPvcsAnnotationValue(checked) === value) return { vm: recorded, plan: checked };
    if (attempt >= MAX_PLAN_ATTEMPTS) {
      throw new Error(
        `VM ${vmRef(ctx.config)}: the removal plan changed ${attempt} times while it was recorded`,
      );
    }
    // A VM written meanwhile protects more (or less): record that plan, and check it again.
    planned = { inputs: { ...inputs, vm: recorded, ...protection }, plan: checked };
  }
  return undefined;
}

/**
 * After the VM is gone Harvester has deleted the recorded PVCs when its cleanup finalizer
 * was on the VM. Without it (an older Harvester, no VM controller) a PVC still there is
 * deleted here, after checking again that no VM that protects it (the plan's) uses it now.
 */
async function deleteLeftovers(
  ctx: OperationContext,
  plan: RemovalPlan,
  reads: RemovalReader,
): Promise<void> {
  if (plan.pvcs.length === 0) return;
  const ns = ctx.config.VMNamespace;
  const found = await Promise.all(plan.pvcs.map((item) => ctx.api.findPvc(ns, item.name)));
  const left = found.filter((pvc) => pvc !== undefined && !pvc.metadata.deletionTimestamp);
  // Usually Harvester deleted them all: then the VMs need not be read.
  if (left.length === 0) return;
  // Protection counts every way a VM uses a PVC, DataVolumes included, as the plan does.
  // A whole-cluster plan may hold volumes no VM of the cluster names: every VM protects then.
  const vms = await readProtectingVms(reads, ctx.config.ClusterName, 'consistent', plan.removeAll);
  const used = new Set(vms.flatMap((v) => referencedClaims(v.spec.template.spec?.volumes)));
  for (const pvc of left) {
    if (!pvc) continue;
    const name = pvc.metadata.name;
    if (used.has(name)) continue;
    ctx.log.info(`Deleting volume ${keyText(ns, name)} that Harvester left behind`);
    await ctx.api.deletePvc(ns, name, pvc.metadata.uid);
  }
}

export async function removeMachine(ctx: OperationContext): Promise<RemovalPlan | undefined> {
  const cfg = ctx.config;
  ctx.log.info('Remove node');
  const reads = removalReader(ctx);
  const recordedPlan = await recordPlan(ctx, reads);
  if (!recordedPlan) {
    ctx.log.info(`VM ${vmRef(cfg)} is already gone`);
    await freeMachineClaims(ctx);
    return undefined;
  }
  const { vm: recorded, plan } = recordedPlan;
  for (const refused of plan.refused) ctx.log.warn(`Volume not deleted with the VM: ${refused.reason}`);
  ctx.log.debug(`volumes to delete with the VM: ${plan.pvcs.map((p) => p.name).join(', ') || 'none'}`);
  const deleting = await ctx.api.deleteVm(recorded);
  ctx.log.info('Waiting for node removed');
  // The answer to a Foreground delete is the VM being deleted: the wait watches from it.
  if (typeof deleting === 'object') await waitVmGone(ctx, 'remove', recorded.metadata.uid, deleting);
  // With Harvester's cleanup finalizer on the VM, the VM cannot go before Harvester deleted
  // every recorded PVC; without it (an older Harvester, no controller) we delete them.
  const harvesterCleansUp =
    typeof deleting === 'object' &&
    (deleting.metadata.finalizers ?? []).includes(FINALIZER_HARVESTER_VM_CLEANUP);
  if (!harvesterCleansUp) await deleteLeftovers(ctx, plan, reads);
  // Only now that the VM is gone: freed earlier, its address could go to a new machine while it still runs.
  await freeMachineClaims(ctx);
  return plan;
}
