import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../log/logger.js';
import { EXIT_FAILED, exitAfter, exitPlan, FAILED_START_SHUTDOWN_MS } from './exit-policy.js';

const silent = createLogger({ format: 'json', level: 'error', sink: { write: () => undefined } });

describe('exitPlan', () => {
  it('exits at once with EXIT_FAILED when leadership is lost, without shutting down', () => {
    const plan = exitPlan({ reason: 'leadership-lost' });
    assert.equal(plan.code, EXIT_FAILED);
    assert.notEqual(plan.code, 0);
    assert.equal(plan.shutdownWithinMs, undefined);
  });

  it('shuts down within a bound, then exits with EXIT_FAILED, when the start failed; names the error', () => {
    const plan = exitPlan({ reason: 'start-failed', error: new Error('machines is forbidden') });
    assert.equal(plan.code, EXIT_FAILED);
    assert.equal(plan.shutdownWithinMs, FAILED_START_SHUTDOWN_MS);
    assert.deepEqual(plan.fields, { error: 'machines is forbidden' });
    assert.deepEqual(exitPlan({ reason: 'start-failed', error: 'odd' }).fields, { error: 'odd' });
  });
});

describe('exitAfter', () => {
  it('exits without calling shutdown when the plan has no shutdown', () => {
    const codes: number[] = [];
    let shutdowns = 0;
    exitAfter(
      { code: 3, message: 'x' },
      { logger: silent, shutdown: () => (shutdowns++, Promise.resolve()), exit: (c) => codes.push(c) },
    );
    assert.deepEqual(codes, [3]);
    assert.equal(shutdowns, 0);
  });

  it('exits after the shutdown, or after the bound when the shutdown hangs or fails', async () => {
    const codes: number[] = [];
    exitAfter(
      { code: 1, message: 'x', shutdownWithinMs: 10_000 },
      { logger: silent, shutdown: () => Promise.resolve(), exit: (c) => codes.push(c) },
    );
    assert.deepEqual(codes, []);
    await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(codes, [1]);

    const start = Date.now();
    const hung = new Promise<number>((resolve) =>
      exitAfter(
        { code: 1, message: 'x', shutdownWithinMs: 30 },
        { logger: silent, shutdown: () => new Promise<void>(() => undefined), exit: resolve },
      ),
    );
    assert.equal(await hung, 1);
    assert.ok(Date.now() - start >= 25);

    const failed = new Promise<number>((resolve) =>
      exitAfter(
        { code: 1, message: 'x', shutdownWithinMs: 10_000 },
        { logger: silent, shutdown: () => Promise.reject(new Error('gone')), exit: resolve },
      ),
    );
    assert.equal(await failed, 1);
  });
});
