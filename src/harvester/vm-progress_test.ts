import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Condition, VirtualMachine, VirtualMachineInstance } from './types.js';
import {
  blockingCondition,
  ipState,
  NO_VM_INSTANCE,
  phaseOf,
  startState,
  stopState,
  vmStatusState,
} from './vm-progress.js';

function vmi(phase: string, conditions: Condition[] = [], extra: Partial<VirtualMachineInstance> = {}) {
  return {
    metadata: { name: 'm1', namespace: 'default', uid: 'u1' },
    status: { phase, conditions },
    ...extra,
  } as VirtualMachineInstance;
}

const unschedulable: Condition = {
  type: 'PodScheduled',
  status: 'False',
  reason: 'Unschedulable',
  message: '0/3 nodes are available: 3 Insufficient memory.',
};
const notReady: Condition = {
  type: 'Ready',
  status: 'False',
  reason: 'PodNotExists',
  message: 'virt-launcher pod has not yet been scheduled',
};

describe('the states a wait reports', () => {
  it('names the condition that holds a VM instance back, the scheduler first', () => {
    assert.equal(
      startState(vmi('Scheduling', [notReady, unschedulable])),
      'VM instance Scheduling; PodScheduled False: Unschedulable (0/3 nodes are available: 3 Insufficient memory.)',
    );
    assert.equal(
      startState(vmi('Pending', [notReady, { type: 'LiveMigratable', status: 'False' }])),
      'VM instance Pending; Ready False: PodNotExists (virt-launcher pod has not yet been scheduled)',
    );
    assert.equal(startState(vmi('Running', [notReady])), 'VM instance Running');
    assert.equal(startState(undefined), NO_VM_INSTANCE);
    assert.equal(startState(vmi('')), 'VM instance (no phase yet)');
  });

  it('tells a restart that the old instance is still there', () => {
    assert.equal(startState(vmi('Running'), 'u1'), 'the old VM instance (Running) is still there');
    assert.equal(startState(vmi('Pending'), 'u0'), 'VM instance Pending');
  });

  it('says whether the guest agent, which reports the addresses, is connected', () => {
    const running = vmi('Running', [{ type: 'Ready', status: 'True' }], {});
    running.status = { ...running.status, interfaces: [{ name: 'nic-0', mac: '52:54:00:00:00:01' }] };
    assert.equal(
      ipState(running),
      'VM instance Running; 1 interface reported, none with a usable address; qemu-guest-agent not connected (it reports the addresses)',
    );
    running.status.conditions = [{ type: 'AgentConnected', status: 'True' }];
    running.status.interfaces = [];
    assert.equal(
      ipState(running),
      'VM instance Running; 0 interfaces reported, none with a usable address; qemu-guest-agent connected',
    );
    assert.equal(ipState(vmi('Scheduled', [notReady])), startState(vmi('Scheduled', [notReady])));
  });

  it('keeps the phase apart from the detail, so a log prints a line per phase', () => {
    assert.equal(phaseOf(startState(vmi('Scheduling', [unschedulable]))), 'VM instance Scheduling');
    assert.equal(phaseOf('VM instance Running'), 'VM instance Running');
    assert.equal(stopState(undefined), 'no VM instance');
    assert.equal(
      stopState(vmi('Running', [], { metadata: { name: 'm1', deletionTimestamp: 'x' } })),
      'VM instance Running, being deleted',
    );
  });

  it('reads a VM without an instance: its printable status and its failure', () => {
    const vm = {
      metadata: { name: 'm1' },
      status: {
        printableStatus: 'Stopped',
        conditions: [
          { type: 'Ready', status: 'False', reason: 'VMINotExists' },
          {
            type: 'Failure',
            status: 'True',
            reason: 'FailedCreate',
            message: 'admission webhook "virtualmachineinstances-create-validator" denied the request',
          },
        ],
      },
    } as unknown as VirtualMachine;
    assert.equal(
      vmStatusState(vm),
      'VM status Stopped; Failure True: FailedCreate (admission webhook "virtualmachineinstances-create-validator" denied the request)',
    );
    assert.equal(vmStatusState({ ...vm, status: {} }), undefined);
    assert.equal(vmStatusState(undefined), undefined);
  });

  it('cuts a long condition message to one short line', () => {
    const long = { ...unschedulable, message: `0/500 nodes are available:\n${'x '.repeat(400)}` };
    const text = startState(vmi('Scheduling', [long]));
    assert.ok(text.length < 400, text);
    assert.doesNotMatch(text, /\n/);
    assert.equal(blockingCondition([{ type: 'Ready', status: 'True' }]), undefined);
  });
});
