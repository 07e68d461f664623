// Remove: decide with the pure removal plan which PVCs go, record them on the VM in
// `harvesterhci.io/removedPersistentVolumeClaims` (Harvester deletes exactly those when
// the VM goes), delete the VM with Foreground propagation and wait until it is gone.
// A VM already gone is success. The plan is recorded with an optimistic-lock patch, so
// a concurrent change (a volume hot-plugged meanwhile) makes us read and plan again.
// What is read to plan is removal-reads.ts's choice: the machine's objects and its guest
// cluster's, never every VM and PVC of the namespace (ADR 0018).
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
  readProtectingVms,
  type RemovalReader,
  type RemovalReadOptions,
} from '../../harvester/removal-reads.js';
import { ANNOTATION_REMOVED_PVCS, FINALIZER_HARVESTER_VM_CLEANUP } from '../../harvester/labels.js';
import type { Vm } from '../harvester-api.js';
import { vmRef, type OperationContext } from './context.js';
import { freeMachineClaims } from './fixed-address.js';
import { waitVmGone } from './waits.js';

const MAX_PLAN_ATTEMPTS = 5;

/** The removal's reads, in the machine's namespace. */
function reader(ctx: OperationContext): RemovalReader {
  const ns = ctx.config.VMNamespace;
  return {
    findVm: (name) => ctx.api.findVm(ns, name),
    findVmi: (name) => ctx.api.findVmi(ns, name),
    findPvc: (name) => ctx.api.findPvc(ns, name),
    // Consistent lists (no resourceVersion): a VM given one of the planned PVCs a moment ago
    // is among them. Kubernetes 1.31+ answers them from its watch cache once it has caught up;
    // "resourceVersion=0" or "not older than a revision just read" would not (ADR 0018).
    listVms: (labelSelector) => ctx.api.listVms(ns, labelSelector),
    listPvcs: (labelSelector) => ctx.api.listPvcs(ns, labelSelector),
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
  const inputs = await readForRemoval(
    reader(ctx),
    { name: ctx.config.MachineName, clusterName: ctx.config.ClusterName },
    opts,
  );
  return inputs ? { vm: inputs.vm, plan: planRemoval(inputs) } : undefined;
}

/**
 * Plans and records the plan on the VM; reads and plans again when the VM changed meanwhile.
 * Undefined when the VM is gone (or went meanwhile: an earlier removal finished).
 */
async function recordPlan(ctx: OperationContext): Promise<{ vm: Vm; plan: RemovalPlan } | undefined> {
  for (let attempt = 1; ; attempt++) {
    const planned = await planMachineRemoval(ctx);
    if (!planned) return undefined;
    const { vm, plan } = planned;
    if (attempt === 1 && wantsRemoveAllPvcs(vm)) {
      ctx.log.info('Force the removal of all persistent volume claims');
    }
    try {
      const patched = await ctx.api.patchVmAnnotations(vm, {
        [ANNOTATION_REMOVED_PVCS]: removedPvcsAnnotationValue(plan),
      });
      return { vm: patched, plan };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err) || attempt >= MAX_PLAN_ATTEMPTS) throw err;
    }
  }
}

/**
 * After the VM is gone Harvester has deleted the recorded PVCs when its cleanup finalizer
 * was on the VM. Without it (an older Harvester, no VM controller) a PVC still there is
 * deleted here, after checking again that no VM that protects it (the plan's) uses it now.
 */
async function deleteLeftovers(ctx: OperationContext, plan: RemovalPlan): Promise<void> {
  if (plan.pvcs.length === 0) return;
  const ns = ctx.config.VMNamespace;
  const found = await Promise.all(plan.pvcs.map((item) => ctx.api.findPvc(ns, item.name)));
  const left = found.filter((pvc) => pvc !== undefined && !pvc.metadata.deletionTimestamp);
  // Usually Harvester deleted them all: then the VMs need not be read.
  if (left.length === 0) return;
  // Protection counts every way a VM uses a PVC, DataVolumes included, as the plan does.
  const vms = await readProtectingVms(reader(ctx), ctx.config.ClusterName);
  const used = new Set(vms.flatMap((v) => referencedClaims(v.spec.template.spec?.volumes)));
  for (const pvc of left) {
    if (!pvc) continue;
    const name = pvc.metadata.name;
    if (used.has(name)) continue;
    ctx.log.info(`Deleting volume ${ns}/${name} that Harvester left behind`);
    await ctx.api.deletePvc(ns, name, pvc.metadata.uid);
  }
}

export async function removeMachine(ctx: OperationContext): Promise<RemovalPlan | undefined> {
  const cfg = ctx.config;
  ctx.log.info('Remove node');
  const recordedPlan = await recordPlan(ctx);
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
  if (!harvesterCleansUp) await deleteLeftovers(ctx, plan);
  // Only now that the VM is gone: freed earlier, its address could go to a new machine while it still runs.
  await freeMachineClaims(ctx);
  return plan;
}
