// The status KubeVirt's VM controller writes (updateStatus, setPrintableStatus,
// isTrimFirstChangeRequestNeeded; v1.7.0), as a pure function of what it observes.
import { runStrategyOf } from './run-strategy.js';
import { findCondition, hasCondition, removeCondition, upsertCondition } from './conditions.js';
import { nowIso } from '../runtime.js';
import type { Condition, VirtualMachine, VirtualMachineInstance, VmStatus } from '../types.js';

export interface VmView {
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  /** A VMI was created and the cache has not shown it yet. */
  startExpected: boolean;
  /** A VMI was deleted and the cache has not shown that yet. */
  stopExpected: boolean;
  /** A PVC of the VM exists and is not Bound. */
  hasUnboundPvc: boolean;
}

export const isFinal = (vmi: VirtualMachineInstance): boolean =>
  vmi.status?.phase === 'Succeeded' || vmi.status?.phase === 'Failed';

const isStarting = (vmi: VirtualMachineInstance): boolean =>
  ['', 'Pending', 'Scheduling', 'Scheduled'].includes(vmi.status?.phase ?? '');

export function hasStartRequest(vm: VirtualMachine): boolean {
  return vm.status?.stateChangeRequests?.[0]?.action === 'Start';
}

export function hasStopRequestFor(vm: VirtualMachine, vmi: VirtualMachineInstance): boolean {
  const first = vm.status?.stateChangeRequests?.[0];
  return first?.action === 'Stop' && first.uid !== undefined && first.uid === vmi.metadata.uid;
}

/** Whether the VM is meant to be running (isSetToStart). */
export function isSetToStart(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): boolean {
  switch (runStrategyOf(vm)) {
    case 'Always':
      return true;
    case 'Manual':
      return vmi ? !hasStopRequestFor(vm, vmi) : hasStartRequest(vm);
    case 'RerunOnFailure':
      return vmi ? vmi.status?.phase !== 'Succeeded' : true;
    case 'Once':
      return vmi === undefined;
    case 'Halted':
    case 'WaitAsReceiver':
    case undefined:
      return false;
  }
}

function printableStatus(view: VmView): string {
  const { vm, vmi } = view;
  const conditions = vmi?.status?.conditions;
  if (vm.metadata.deletionTimestamp) return 'Terminating';
  if (vmi && !isFinal(vmi) && (vmi.metadata.deletionTimestamp || view.stopExpected)) return 'Stopping';
  if (vmi?.status?.phase === 'Running') {
    return hasCondition(conditions, 'Paused', 'True') ? 'Paused' : 'Running';
  }
  if (hasCondition(conditions, 'Synchronized', 'False', 'FailedPvcNotFound')) return 'FailedPvcNotFound';
  if (hasCondition(conditions, 'PodScheduled', 'False', 'Unschedulable')) return 'ErrorUnschedulable'; // VirtualMachineStatusUnschedulable
  if (isSetToStart(vm, vmi) && view.hasUnboundPvc) return 'WaitingForVolumeBinding';
  if (vmi ? isStarting(vmi) : view.startExpected) return 'Starting';
  if (vmi ? isFinal(vmi) : !view.startExpected) return 'Stopped';
  return 'Unknown';
}

/** Pops the first state change request once it has been acted upon. */
function trimmedRequests(
  vm: VirtualMachine,
  vmi: VirtualMachineInstance | undefined,
): VmStatus['stateChangeRequests'] {
  const requests = vm.status?.stateChangeRequests ?? [];
  const first = requests[0];
  if (!first) return requests;
  let done = false;
  if (first.action === 'Stop') done = !vmi || first.uid === undefined || first.uid !== vmi.metadata.uid;
  else if (first.action === 'Start')
    done = vmi !== undefined && !vmi.metadata.deletionTimestamp && !isFinal(vmi);
  return done ? requests.slice(1) : requests;
}

function syncedConditions(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): Condition[] {
  const now = nowIso();
  let conditions = vm.status?.conditions ?? [];
  const vmiReady = findCondition(vmi?.status?.conditions, 'Ready');
  const ready: Condition = !vmi
    ? {
        type: 'Ready',
        status: 'False',
        reason: 'VMINotExists',
        message: 'VMI does not exist',
        lastProbeTime: now,
        lastTransitionTime: now,
      }
    : vmiReady
      ? { ...vmiReady, type: 'Ready' }
      : {
          type: 'Ready',
          status: 'False',
          reason: 'VMIConditionMissing',
          message: 'VMI is missing the Ready condition',
          lastProbeTime: now,
          lastTransitionTime: now,
        };
  conditions = upsertCondition(conditions, ready);
  if (!vmi) return conditions;
  const own = new Set(['Ready', 'Failure', 'RestartRequired']);
  const fromVmi = new Set<string>();
  for (const c of vmi.status?.conditions ?? []) {
    if (own.has(c.type)) continue;
    fromVmi.add(c.type);
    conditions = upsertCondition(conditions, { ...c });
  }
  for (const c of conditions)
    if (!own.has(c.type) && !fromVmi.has(c.type)) conditions = removeCondition(conditions, c.type);
  return conditions;
}

export function nextVmStatus(view: VmView): VmStatus {
  const { vm, vmi } = view;
  const status: VmStatus = { ...vm.status };
  status.created = vmi !== undefined;
  status.ready = hasCondition(vmi?.status?.conditions, 'Ready', 'True');
  const strategy = runStrategyOf(vm);
  // Recorded from the first VMI on: it tells "never started" from "stopped".
  if ((status.runStrategy || status.created) && strategy) status.runStrategy = strategy;
  const generation = vmi?.metadata.annotations?.['kubevirt.io/vm-generation'];
  if (vmi && generation !== undefined && /^\d+$/.test(generation)) {
    status.observedGeneration = Number(generation);
    status.desiredGeneration = vm.metadata.generation ?? 1;
  }
  const requests = trimmedRequests(vm, vmi);
  if (requests && requests.length > 0) status.stateChangeRequests = requests;
  else delete status.stateChangeRequests;
  status.conditions = syncedConditions(vm, vmi);
  status.printableStatus = printableStatus(view);
  return status;
}
