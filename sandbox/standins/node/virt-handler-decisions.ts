// virt-handler stand-in's pure decisions (virt-handler.ts has the sources): which step a VMI
// is in, and the status each step writes.
import { nowIso } from '../runtime.js';
import type { Condition, VirtualMachineInstance, VmiPhase, VmiStatus } from '../types.js';
import { domainInterfaces, domainVolumeStatuses, withGuestAgentData } from './domain-status.js';
import type { GuestAddresses } from './guest-addresses.js';

/** The machine type libvirt resolves q35 to on Harvester's hosts (virt-handler records it). */
export const MACHINE_TYPE = 'pc-q35-rhel9.6.0';

export const isFinal = (vmi: VirtualMachineInstance): boolean =>
  vmi.status?.phase === 'Succeeded' || vmi.status?.phase === 'Failed';

export function withPhase(status: VmiStatus, phase: VmiPhase): VmiStatus {
  if (status.phase === phase) return status;
  return {
    ...status,
    phase,
    phaseTransitionTimestamps: [
      ...(status.phaseTransitionTimestamps ?? []),
      { phase, phaseTransitionTimestamp: nowIso() },
    ],
  };
}

export function upsertCondition(conditions: Condition[] | undefined, cond: Condition): Condition[] {
  const list = (conditions ?? []).filter((c) => c.type !== cond.type);
  const old = (conditions ?? []).find((c) => c.type === cond.type);
  return [...list, old && old.status === cond.status ? old : cond];
}

/** What virt-handler does for a VMI on its node: shut its guest down, start its domain, run it, or nothing. */
export function vmiStep(
  vmi: VirtualMachineInstance,
  launcherGoing: boolean,
): 'shutdown' | 'start' | 'running' | undefined {
  if (isFinal(vmi)) return undefined;
  const phase = vmi.status?.phase;
  if (vmi.metadata.deletionTimestamp || launcherGoing)
    return phase === 'Scheduled' || phase === 'Running' ? 'shutdown' : undefined;
  if (phase === 'Scheduled') return 'start';
  if (phase === 'Running') return 'running';
  return undefined;
}

/** A Scheduled VMI's status once its domain started. */
export function startedStatus(s: VmiStatus, v: VirtualMachineInstance, mac: () => string): VmiStatus {
  if (s.phase !== 'Scheduled') return s;
  return {
    ...withPhase(s, 'Running'),
    interfaces: domainInterfaces(v, mac),
    volumeStatus: domainVolumeStatuses(v),
    machine: { type: MACHINE_TYPE },
    // No SELinux on the node: virt-controller needs this to render hot-plug attachment pods.
    selinuxContext: 'none',
    guestOSInfo: {},
  };
}

/** A Running VMI's status: its volumes, and once the guest agent is up its addresses and OS. */
export function runningStatus(
  s: VmiStatus,
  v: VirtualMachineInstance,
  agentUp: boolean,
  guest: GuestAddresses[],
): VmiStatus {
  const next: VmiStatus = { ...s, volumeStatus: domainVolumeStatuses(v) };
  if (!agentUp) return next;
  next.interfaces = withGuestAgentData(s.interfaces ?? [], guest);
  next.conditions = upsertCondition(s.conditions, {
    type: 'AgentConnected',
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: nowIso(),
  });
  next.guestOSInfo = { id: 'ubuntu', name: 'Ubuntu', version: '24.04', kernelRelease: '6.8.0-generic' };
  return next;
}

/** A deleted VMI's status once its guest shut down. */
export function shutdownStatus(s: VmiStatus, vmi: VirtualMachineInstance): VmiStatus {
  if (isFinal({ ...vmi, status: s })) return s;
  return {
    ...withPhase(s, 'Succeeded'),
    conditions: (s.conditions ?? []).filter((c) => c.type !== 'AgentConnected'),
  };
}

/** When each VMI (by UID) entered the step it is in, as this process saw it. */
export class StepClocks {
  private readonly clocks = new Map<string, { step: string; since: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** What is left of `delay` since the VMI entered `step` (0 when it is over). */
  remaining(uid: string, step: string, delay: number): number {
    let clock = this.clocks.get(uid);
    if (clock?.step !== step) {
      clock = { step, since: this.now() };
      this.clocks.set(uid, clock);
    }
    return Math.max(0, clock.since + delay - this.now());
  }

  forget(uid: string): void {
    this.clocks.delete(uid);
  }
}
