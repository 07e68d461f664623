// What the lifecycle's waits tell the operator about a machine's VM: the phase it is in
// and, when it is not where the wait wants it, the condition that holds it there
// (KubeVirt copies the launcher pod's PodScheduled=False here when nothing can host it,
// sets Synchronized=False when it cannot build the domain, Ready=False otherwise).
// A state is "<phase>" or "<phase>; <detail>": the job log prints a line when the phase
// part changes and repeats the whole state in its periodic progress lines.
import type { Condition, VirtualMachine, VirtualMachineInstance } from './types.js';

/** How much of a condition message a log line quotes (scheduler messages list every node). */
const MAX_MESSAGE_CHARS = 300;

/** Conditions that explain a VM instance that is not running, most telling first. */
const BLOCKING_ORDER = ['PodScheduled', 'Synchronized', 'Failure', 'Ready'];

export function stateText(phase: string, detail?: string): string {
  return detail ? `${phase}; ${detail}` : phase;
}

/** The phase part of a state (what the job log prints a line for when it changes). */
export function phaseOf(state: string): string {
  const at = state.indexOf('; ');
  return at < 0 ? state : state.slice(0, at);
}

function clip(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= MAX_MESSAGE_CHARS ? oneLine : `${oneLine.slice(0, MAX_MESSAGE_CHARS)}…`;
}

/** "PodScheduled False: Unschedulable (0/3 nodes are available: …)". */
export function conditionText(c: Condition): string {
  const reason = c.reason ? `: ${c.reason}` : '';
  const message = c.message ? ` (${clip(c.message)})` : '';
  return `${c.type} ${c.status}${reason}${message}`;
}

/** The first condition, in BLOCKING_ORDER, that is not True; undefined when none is. */
export function blockingCondition(conditions: readonly Condition[] | undefined): Condition | undefined {
  for (const type of BLOCKING_ORDER) {
    const c = conditions?.find((x) => x.type === type);
    if (c && c.status !== 'True') return c;
  }
  return undefined;
}

function vmiPhase(vmi: VirtualMachineInstance): string {
  return `VM instance ${vmi.status?.phase || '(no phase yet)'}`;
}

export const NO_VM_INSTANCE = 'no VM instance yet';

/** A VM instance on its way to Running; `oldUid` is the instance a restart replaces. */
export function startState(vmi: VirtualMachineInstance | undefined, oldUid?: string): string {
  if (!vmi) return NO_VM_INSTANCE;
  if (oldUid !== undefined && vmi.metadata.uid === oldUid) {
    return stateText(`the old VM instance (${vmi.status?.phase || 'no phase'}) is still there`);
  }
  if (vmi.metadata.deletionTimestamp) return stateText(`${vmiPhase(vmi)}, being deleted`);
  if (vmi.status?.phase === 'Running') return vmiPhase(vmi);
  const blocking = blockingCondition(vmi.status?.conditions);
  return stateText(vmiPhase(vmi), blocking && conditionText(blocking));
}

/** A running VM instance that has not reported a usable address yet. */
export function ipState(vmi: VirtualMachineInstance | undefined): string {
  if (!vmi) return NO_VM_INSTANCE;
  if (vmi.status?.phase !== 'Running') return startState(vmi);
  const count = (vmi.status.interfaces ?? []).length;
  const agent = vmi.status.conditions?.find((c) => c.type === 'AgentConnected');
  const agentText =
    agent?.status === 'True'
      ? 'qemu-guest-agent connected'
      : 'qemu-guest-agent not connected (it reports the addresses)';
  return stateText(
    vmiPhase(vmi),
    `${count} interface${count === 1 ? '' : 's'} reported, none with a usable address; ${agentText}`,
  );
}

/** A VM instance on its way out (Stop). */
export function stopState(vmi: VirtualMachineInstance | undefined): string {
  if (!vmi) return 'no VM instance';
  return vmi.metadata.deletionTimestamp ? `${vmiPhase(vmi)}, being deleted` : vmiPhase(vmi);
}

/**
 * What the VM itself says while it has no instance (a refused or pending instance
 * creation shows only here): "VM status Provisioning; Failure True: FailedCreate (…)".
 */
export function vmStatusState(vm: VirtualMachine | undefined): string | undefined {
  if (!vm) return undefined;
  const printable = vm.status?.printableStatus;
  const failure = vm.status?.conditions?.find((c) => c.type === 'Failure' && c.status === 'True');
  const notReady = vm.status?.conditions?.find((c) => c.type === 'Ready' && c.status !== 'True');
  const telling = failure ?? (notReady?.reason ? notReady : undefined);
  if (!printable && !telling) return undefined;
  return stateText(`VM status ${printable || 'not reported yet'}`, telling && conditionText(telling));
}
