import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MachineState, machineStateOf } from './machine-state.js';
import { vmiWith, vmWith } from './testing/fixtures.js';
import type { VMIPhase } from './types.js';

describe('machineStateOf', () => {
  const vm = vmWith('m1', 'default', []);

  it('maps VMI phases as the Go driver does', () => {
    const table: Array<[VMIPhase, MachineState]> = [
      ['Pending', MachineState.Starting],
      ['Scheduling', MachineState.Starting],
      ['Scheduled', MachineState.Starting],
      ['Running', MachineState.Running],
      ['Succeeded', MachineState.Stopping],
      ['Failed', MachineState.Error],
      ['Unknown', MachineState.None],
      ['WaitingForSync', MachineState.None],
      ['', MachineState.None],
    ];
    for (const [phase, state] of table) {
      assert.equal(machineStateOf(vm, vmiWith('m1', 'default', { phase })), state, phase);
    }
    assert.equal(machineStateOf(vm, vmiWith('m1', 'default', {})), MachineState.None, 'no phase yet');
    assert.equal(
      machineStateOf(vm, vmiWith('m1', 'default', { phase: 'Hibernating' as VMIPhase })),
      MachineState.None,
    );
  });

  it('no VMI: Stopped; no VM: NotFound', () => {
    assert.equal(machineStateOf(vm, undefined), MachineState.Stopped);
    assert.equal(machineStateOf(undefined, undefined), MachineState.NotFound);
    assert.equal(
      machineStateOf(undefined, vmiWith('m1', 'default', { phase: 'Running' })),
      MachineState.NotFound,
    );
  });

  it('a VM or VMI being deleted is Stopping, whatever the phase', () => {
    const deleting = { ...vm, metadata: { ...vm.metadata, deletionTimestamp: '2025-01-01T00:00:00Z' } };
    assert.equal(
      machineStateOf(deleting, vmiWith('m1', 'default', { phase: 'Running' })),
      MachineState.Stopping,
    );
    assert.equal(machineStateOf(deleting, undefined), MachineState.Stopping);
    const vmi = vmiWith('m1', 'default', { phase: 'Running' });
    vmi.metadata.deletionTimestamp = '2025-01-01T00:00:00Z';
    assert.equal(machineStateOf(vm, vmi), MachineState.Stopping);
  });
});
