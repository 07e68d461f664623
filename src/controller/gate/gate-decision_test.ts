import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { DeletionScope } from './deletion-scope.js';
import {
  cleanupBudget,
  decideAfterCleanup,
  decideGate,
  gateDeadlineAt,
  type InfraState,
} from './gate-decision.js';

const whole: DeletionScope = { kind: 'whole-cluster', because: 'x' };

describe('decideGate', () => {
  it('adds the hook to a live machine whose infra machine exists, once', () => {
    assert.deepEqual(decideGate({ hookPresent: false, scope: { kind: 'not-deleting' }, infra: 'present' }), {
      addHook: true,
      cleanUp: false,
    });
    assert.deepEqual(decideGate({ hookPresent: true, scope: { kind: 'not-deleting' }, infra: 'present' }), {
      addHook: false,
      cleanUp: false,
    });
    assert.equal(
      decideGate({ hookPresent: false, scope: { kind: 'not-deleting' }, infra: 'deleting' }).addHook,
      false,
    );
  });
  it('releases at once, without cleanup, on scale-down, opt-out and unknown cluster', () => {
    for (const scope of [
      { kind: 'single-machine' },
      { kind: 'opted-out', on: 'c' },
      { kind: 'cluster-unknown' },
    ] as DeletionScope[]) {
      const plan = decideGate({ hookPresent: true, scope, infra: 'present' });
      assert.equal(plan.cleanUp, false);
      assert.ok(plan.release, scope.kind);
    }
    assert.equal(
      decideGate({ hookPresent: true, scope: { kind: 'cluster-unknown' }, infra: 'present' }).release
        ?.warning,
      true,
    );
  });
  it('cleans up on whole-cluster deletion, and never adds a hook to a Machine being deleted', () => {
    assert.deepEqual(decideGate({ hookPresent: true, scope: whole, infra: 'present' }), {
      addHook: false,
      cleanUp: true,
    });
    assert.deepEqual(decideGate({ hookPresent: false, scope: whole, infra: 'present' }), {
      addHook: false,
      cleanUp: true,
    });
    assert.ok(decideGate({ hookPresent: true, scope: whole, infra: 'gone' }).release);
  });
  it('never releases a whole-cluster gate before cleanup while the infra machine exists (property)', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.constantFrom<InfraState>('present', 'deleting'), (hookPresent, infra) => {
        const plan = decideGate({ hookPresent, scope: whole, infra });
        assert.equal(plan.release, undefined);
        assert.equal(plan.cleanUp, true);
        assert.equal(plan.addHook, false);
      }),
    );
  });
});

describe('decideAfterCleanup', () => {
  const deleted = '2025-01-01T00:00:00Z';
  const t0 = Date.parse(deleted);
  const failed = { kind: 'failed', reason: 'HarvesterCredentialRejected', message: 'expired' } as const;
  it('releases after the VM was annotated, already annotated, or is gone', () => {
    for (const outcome of [
      { kind: 'annotated', vm: 'ns/vm', how: 'name' },
      { kind: 'already-annotated', vm: 'ns/vm' },
      { kind: 'vm-gone', looked: 'ns/vm' },
    ] as const) {
      const r = decideAfterCleanup({
        outcome,
        deletionTimestamp: deleted,
        now: t0,
        deadlineMs: 1000,
        retryInMs: 10,
      });
      assert.equal(r.action, 'release');
      assert.equal(r.action === 'release' && r.warning, false);
    }
  });
  it('holds a failed cleanup until the deadline, retrying no later than the deadline', () => {
    const r = decideAfterCleanup({
      outcome: failed,
      deletionTimestamp: deleted,
      now: t0 + 500,
      deadlineMs: 1000,
      retryInMs: 10_000,
    });
    assert.deepEqual(r, {
      action: 'hold',
      retryInMs: 500,
      reason: 'HarvesterCredentialRejected',
      message: 'expired',
    });
  });
  it('releases with a warning once the deadline passed', () => {
    const r = decideAfterCleanup({
      outcome: failed,
      deletionTimestamp: deleted,
      now: t0 + 1000,
      deadlineMs: 1000,
      retryInMs: 10,
    });
    assert.equal(r.action, 'release');
    assert.equal(r.action === 'release' && r.warning, true);
  });
});

describe('cleanupBudget', () => {
  const deadline = gateDeadlineAt('2025-06-01T00:00:00Z', 60_000, 0);
  it('gives an attempt the time left before the deadline, never more', () => {
    fc.assert(
      fc.property(fc.integer({ min: -60_000, max: 60_000 }), fc.boolean(), (offset, triedBefore) => {
        const now = deadline + offset;
        const b = cleanupBudget({ deadline, now, triedBefore, lastChanceMs: 5_000 });
        if (now < deadline) return b.attempt && b.timeoutMs === deadline - now;
        return triedBefore ? !b.attempt : b.attempt && b.timeoutMs === 5_000;
      }),
    );
  });
  it('past the deadline: one short last attempt for a machine never tried here, none after a failure', () => {
    assert.deepEqual(cleanupBudget({ deadline, now: deadline, triedBefore: false, lastChanceMs: 5_000 }), {
      attempt: true,
      timeoutMs: 5_000,
    });
    assert.deepEqual(cleanupBudget({ deadline, now: deadline + 1, triedBefore: true, lastChanceMs: 5_000 }), {
      attempt: false,
    });
  });
  it('counts from the deletionTimestamp, or from now when it cannot be read', () => {
    assert.equal(deadline, Date.parse('2025-06-01T00:01:00Z'));
    assert.equal(gateDeadlineAt(undefined, 1_000, 5), 1_005);
    assert.equal(gateDeadlineAt('not a time', 1_000, 5), 1_005);
  });
});
