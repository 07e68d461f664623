// Remove: decide with the pure removal plan which PVCs go, record them on the VM in
// `harvesterhci.io/removedPersistentVolumeClaims` (Harvester deletes exactly those when
// the VM goes), delete the VM with Foreground propagation and wait until it is gone.
// A VM already gone is success. The plan is recorded with an optimistic-lock patch, so
// a concurrent change (a volume hot-plugged meanwhile) makes us read and plan again.
import { isConflict, isNotFound } from '../../kube/errors.js';
import {
  planRemoval,
  referencedClaims,
  removedPvcsAnnotationValue,
  wantsRemoveAllPvcs,
  type RemovalPlan,
} from '../../harvester/removal-plan.js';
import { ANNOTATION_REMOVED_PVCS, FINALIZER_HARVESTER_VM_CLEANUP } from '../../harvester/labels.js';
import type { Vm } from '../harvester-api.js';
import { vmRef, type OperationContext } from './context.js';
import { freeMachineClaims } from './fixed-address.js';
import { waitVmGone } from './waits.js';

const MAX_PLAN_ATTEMPTS = 5;

/** The namespace's VMs (the machine's among them): one list serves both. */
async function readVms(ctx: OperationContext): Promise<{ vm: Vm | undefined; vms: Vm[] }> {
  const vms = await ctx.api.listVms(ctx.config.VMNamespace);
  return { vm: vms.find((v) => v.metadata.name === ctx.config.MachineName), vms };
}

/** Reads what the plan needs (the namespace's VMs when not given) and makes it; no change on Harvester. */
export async function planMachineRemoval(
  ctx: OperationContext,
  vm: Vm,
  vmsRead?: Vm[],
): Promise<RemovalPlan> {
  const ns = ctx.config.VMNamespace;
  const [vmi, pvcs, vms] = await Promise.all([
    ctx.api.findVmi(ns, ctx.config.MachineName),
    ctx.api.listPvcs(ns),
    vmsRead ?? ctx.api.listVms(ns),
  ]);
  return planRemoval({
    vm,
    ...(vmi ? { vmi } : {}),
    pvcsInNamespace: pvcs,
    vmsInNamespace: vms,
    removeAll: wantsRemoveAllPvcs(vm),
    clusterName: ctx.config.ClusterName,
  });
}

/**
 * Records the plan on the VM; re-reads and re-plans when the VM changed meanwhile.
 * Undefined when the VM went away meanwhile (an earlier removal finished).
 */
async function recordPlan(
  ctx: OperationContext,
  first: { vm: Vm; vms: Vm[] },
): Promise<{ vm: Vm; plan: RemovalPlan } | undefined> {
  let { vm, vms } = first;
  for (let attempt = 1; ; attempt++) {
    const plan = await planMachineRemoval(ctx, vm, vms);
    try {
      const patched = await ctx.api.patchVmAnnotations(vm, {
        [ANNOTATION_REMOVED_PVCS]: removedPvcsAnnotationValue(plan),
      });
      return { vm: patched, plan };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err) || attempt >= MAX_PLAN_ATTEMPTS) throw err;
      const fresh = await readVms(ctx);
      if (!fresh.vm) return undefined;
      ({ vms } = fresh);
      vm = fresh.vm;
    }
  }
}

/**
 * After the VM is gone Harvester has deleted the recorded PVCs when its cleanup finalizer
 * was on the VM. Without it (an older Harvester, no VM controller) a PVC still there is
 * deleted here, after checking again that no VM uses it now.
 */
async function deleteLeftovers(ctx: OperationContext, plan: RemovalPlan): Promise<void> {
  if (plan.pvcs.length === 0) return;
  const ns = ctx.config.VMNamespace;
  const pvcs = await ctx.api.listPvcs(ns);
  const left = plan.pvcs.flatMap((item) => {
    const pvc = pvcs.find((p) => p.metadata.name === item.name);
    return pvc && !pvc.metadata.deletionTimestamp ? [pvc] : [];
  });
  // Usually Harvester deleted them all: then the VMs need not be read.
  if (left.length === 0) return;
  // Protection counts every way a VM uses a PVC, DataVolumes included, as the plan does.
  const used = new Set(
    (await ctx.api.listVms(ns)).flatMap((v) => referencedClaims(v.spec.template.spec?.volumes)),
  );
  for (const pvc of left) {
    const name = pvc.metadata.name;
    if (used.has(name)) continue;
    ctx.log.info(`Deleting volume ${ns}/${name} that Harvester left behind`);
    await ctx.api.deletePvc(ns, name, pvc.metadata.uid);
  }
}

export async function removeMachine(ctx: OperationContext): Promise<RemovalPlan | undefined> {
  const cfg = ctx.config;
  ctx.log.info('Remove node');
  const { vm, vms } = await readVms(ctx);
  if (!vm) {
    ctx.log.info(`VM ${vmRef(cfg)} is already gone`);
    await freeMachineClaims(ctx);
    return undefined;
  }
  if (wantsRemoveAllPvcs(vm)) ctx.log.info('Force the removal of all persistent volume claims');
  const recordedPlan = await recordPlan(ctx, { vm, vms });
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
