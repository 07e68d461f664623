// The machine state rancher-machine asks for (GetState), from the VM and its VMI.
// Same mapping as the Go driver for the VMI phases; two additions for objects on their
// way out, which the Go driver reports as still Running.

import type { VirtualMachine, VirtualMachineInstance } from './types.js';

/** docker-machine's state.State, with the same numbers on the wire (the RPC surface re-exports it). */
export enum MachineState {
  None = 0,
  Running = 1,
  Paused = 2,
  Saved = 3,
  Stopped = 4,
  Stopping = 5,
  Starting = 6,
  Error = 7,
  Timeout = 8,
  NotFound = 9,
}

/**
 * - no VM: NotFound (rancher-machine's `rm` and `status` treat it as gone);
 * - VM or VMI being deleted: Stopping;
 * - no VMI: Stopped (a RerunOnFailure VM after `stop` has none);
 * - VMI phase: Pending/Scheduling/Scheduled → Starting, Running → Running,
 *   Succeeded → Stopping, Failed → Error, anything else (""/Unknown/WaitingForSync) → None.
 */
export function machineStateOf(
  vm: VirtualMachine | undefined,
  vmi: VirtualMachineInstance | undefined,
): MachineState {
  if (!vm) return MachineState.NotFound;
  if (vm.metadata.deletionTimestamp) return MachineState.Stopping;
  if (!vmi) return MachineState.Stopped;
  if (vmi.metadata.deletionTimestamp) return MachineState.Stopping;
  switch (vmi.status?.phase ?? '') {
    case 'Pending':
    case 'Scheduling':
    case 'Scheduled':
      return MachineState.Starting;
    case 'Running':
      return MachineState.Running;
    case 'Succeeded':
      return MachineState.Stopping;
    case 'Failed':
      return MachineState.Error;
    case '':
    case 'Unknown':
    case 'WaitingForSync':
      return MachineState.None;
    default:
      // A phase a newer KubeVirt invents: say nothing rather than guess.
      return MachineState.None;
  }
}
