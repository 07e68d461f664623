// virt-api's start/stop/restart decisions (kubevirt v1.7.0 lifecycle.go), case by case.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  changeRequestPatch,
  decideRestart,
  decideStart,
  decideStop,
  runStrategyOf,
  type VmView,
  type VmiView,
} from './state-change.js';

const vm = (runStrategy: string | undefined, status?: VmView['status'], running?: boolean): VmView => ({
  metadata: { name: 'vm1' },
  spec: { ...(runStrategy ? { runStrategy } : {}), ...(running !== undefined ? { running } : {}) },
  ...(status ? { status } : {}),
});
const vmi = (phase: string, uid = 'uid-1'): VmiView => ({ metadata: { uid }, status: { phase } });

describe('virt-api start', () => {
  it('refuses a VM whose VMI is not final, and lets Unknown or unset phases through', () => {
    for (const phase of ['Pending', 'Scheduling', 'Scheduled', 'Running']) {
      assert.deepEqual(decideStart(vm('RerunOnFailure'), vmi(phase)), {
        kind: 'conflict',
        cause: 'VM is already running',
      });
    }
    assert.equal(decideStart(vm('RerunOnFailure'), vmi('Unknown')).kind, 'patch');
    assert.equal(decideStart(vm('RerunOnFailure'), vmi('')).kind, 'patch');
  });

  it('asks for Start on a stopped RerunOnFailure or Manual VM, adding /status when it is empty', () => {
    assert.deepEqual(decideStart(vm('RerunOnFailure'), undefined), {
      kind: 'patch',
      target: 'status',
      ops: [{ op: 'add', path: '/status', value: { stateChangeRequests: [{ action: 'Start' }] } }],
    });
    assert.deepEqual(decideStart(vm('Manual', { printableStatus: 'Stopped' }), undefined), {
      kind: 'patch',
      target: 'status',
      ops: [
        { op: 'test', path: '/status/stateChangeRequests', value: null },
        { op: 'add', path: '/status/stateChangeRequests', value: [{ action: 'Start' }] },
      ],
    });
  });

  it('restarts a Succeeded RerunOnFailure VMI and refuses a Failed one', () => {
    const decision = decideStart(vm('RerunOnFailure', { created: true }), vmi('Succeeded', 'old'));
    assert.equal(decision.kind, 'patch');
    assert.deepEqual(decision.kind === 'patch' && decision.ops[1], {
      op: 'add',
      path: '/status/stateChangeRequests',
      value: [{ action: 'Stop', uid: 'old' }, { action: 'Start' }],
    });
    assert.deepEqual(decideStart(vm('RerunOnFailure'), vmi('Failed')), {
      kind: 'conflict',
      cause: 'RerunOnFailure does not support starting VM from failed state',
    });
  });

  it('sets runStrategy Always on a Halted VM, with a test of the value it read', () => {
    assert.deepEqual(decideStart(vm('Halted'), undefined), {
      kind: 'patch',
      target: 'spec',
      ops: [
        { op: 'test', path: '/spec/runStrategy', value: 'Halted' },
        { op: 'replace', path: '/spec/runStrategy', value: 'Always' },
      ],
    });
  });

  it('refuses Always and Once', () => {
    assert.deepEqual(decideStart(vm('Always'), undefined), {
      kind: 'conflict',
      cause: 'Always does not support manual start requests',
    });
    assert.deepEqual(decideStart(vm('Once'), undefined), {
      kind: 'conflict',
      cause: 'Once does not support manual start requests',
    });
  });
});

describe('virt-api stop', () => {
  it('refuses a RerunOnFailure or Manual VM without a running VMI', () => {
    for (const strategy of ['RerunOnFailure', 'Manual']) {
      assert.deepEqual(decideStop(vm(strategy), undefined), { kind: 'conflict', cause: 'VM is not running' });
      assert.deepEqual(decideStop(vm(strategy), vmi('Succeeded')), {
        kind: 'conflict',
        cause: 'VM is not running',
      });
    }
  });

  it('asks for Stop with the VMI uid, replacing a pending request', () => {
    const decision = decideStop(
      vm('RerunOnFailure', { stateChangeRequests: [{ action: 'Start' }] }),
      vmi('Running'),
    );
    assert.deepEqual(decision, {
      kind: 'patch',
      target: 'status',
      ops: [
        { op: 'test', path: '/status/stateChangeRequests', value: [{ action: 'Start' }] },
        { op: 'replace', path: '/status/stateChangeRequests', value: [{ action: 'Stop', uid: 'uid-1' }] },
      ],
    });
  });

  it('sets runStrategy Halted on Always and Once VMs', () => {
    for (const strategy of ['Always', 'Once']) {
      const decision = decideStop(vm(strategy), vmi('Running'));
      assert.deepEqual(decision.kind === 'patch' && decision.ops[1], {
        op: 'replace',
        path: '/spec/runStrategy',
        value: 'Halted',
      });
    }
  });

  it('refuses a Halted VM: not running, or running without a shorter grace period', () => {
    assert.deepEqual(decideStop(vm('Halted'), undefined), { kind: 'conflict', cause: 'VM is not running' });
    assert.deepEqual(decideStop(vm('Halted'), vmi('Running')), {
      kind: 'conflict',
      cause: 'Halted only supports manual stop requests with a shorter graceperiod',
    });
  });
});

describe('virt-api restart', () => {
  it('refuses Halted and Once (in virt-api’s own spelling) and a VM without a VMI', () => {
    assert.deepEqual(decideRestart(vm('Halted'), vmi('Running')), {
      kind: 'conflict',
      cause: 'RunStategy Halted does not support manual restart requests',
    });
    assert.deepEqual(decideRestart(vm('Once'), vmi('Running')), {
      kind: 'conflict',
      cause: 'RunStategy Once does not support manual restart requests',
    });
    assert.deepEqual(decideRestart(vm('RerunOnFailure'), undefined), {
      kind: 'conflict',
      cause: 'VM is not running: Halted',
    });
  });

  it('asks for Stop of this VMI then Start', () => {
    for (const strategy of ['RerunOnFailure', 'Manual', 'Always']) {
      assert.deepEqual(decideRestart(vm(strategy), vmi('Running', 'u-7')), {
        kind: 'patch',
        target: 'status',
        ops: [
          {
            op: 'add',
            path: '/status',
            value: { stateChangeRequests: [{ action: 'Stop', uid: 'u-7' }, { action: 'Start' }] },
          },
        ],
      });
    }
  });

  it('will not stack a restart on a pending request', () => {
    assert.deepEqual(
      decideRestart(vm('RerunOnFailure', { stateChangeRequests: [{ action: 'Start' }] }), vmi('Running')),
      {
        kind: 'internal',
        cause: 'unable to complete request: stop/start already underway',
      },
    );
  });
});

describe('run strategy and status', () => {
  it('reads spec.running as Always/Halted, defaults to Halted, refuses both fields', () => {
    assert.deepEqual(runStrategyOf(vm(undefined, undefined, true)), { strategy: 'Always' });
    assert.deepEqual(runStrategyOf(vm(undefined, undefined, false)), { strategy: 'Halted' });
    assert.deepEqual(runStrategyOf(vm(undefined)), { strategy: 'Halted' });
    assert.deepEqual(runStrategyOf(vm('Always', undefined, true)), {
      error: 'running and runstrategy are mutually exclusive',
    });
  });

  it('treats a status of zero values as empty and clears a start failure', () => {
    assert.deepEqual(
      changeRequestPatch(vm('Manual', { created: false, conditions: [] }), [{ action: 'Start' }]),
      {
        kind: 'patch',
        target: 'status',
        ops: [{ op: 'add', path: '/status', value: { stateChangeRequests: [{ action: 'Start' }] } }],
      },
    );
    const decision = changeRequestPatch(vm('Manual', { startFailure: { retries: 2 } }), [
      { action: 'Start' },
    ]);
    assert.deepEqual(decision.kind === 'patch' && decision.ops.at(-1), {
      op: 'remove',
      path: '/status/startFailure',
    });
  });
});
