// The work queue's promises, each observed through the reconciles themselves (a reconcile
// that waits on the test, or reports when it runs), so that no outcome depends on how fast
// a loaded machine runs timers. Retry delays are asserted as lower bounds only.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WorkQueue } from './work-queue.js';

/** A promise with its resolver. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('WorkQueue', () => {
  it('made paused, keeps what is added (merged) and processes it only from start()', async () => {
    const seen: string[] = [];
    const q = new WorkQueue(
      (k) => {
        seen.push(k);
        return Promise.resolve();
      },
      { paused: true },
    );
    q.add('a');
    q.add('a');
    q.add('b');
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(seen, [], 'nothing before start');
    assert.equal(q.length, 2);
    q.start();
    await q.idle();
    assert.deepEqual(seen, ['a', 'b']);
    await q.stop();
    assert.ok(q.stopped);
  });

  it('merges repeated adds of a queued key into one reconcile', async () => {
    const seen: string[] = [];
    const gate = deferred();
    const q = new WorkQueue(
      async (k) => {
        seen.push(k);
        await gate.promise;
      },
      { concurrency: 1 },
    );
    q.add('a'); // runs, holding the only worker
    q.add('b');
    q.add('b');
    q.add('b');
    gate.resolve();
    await q.idle();
    assert.deepEqual(seen, ['a', 'b']);
    await q.stop();
  });

  it('never runs one key twice at once, and reruns it when it changed meanwhile', async () => {
    let running = 0;
    let maxRunning = 0;
    const gates: Array<() => void> = [];
    let started = deferred<number>();
    let runs = 0;
    const q = new WorkQueue(
      async () => {
        running++;
        runs++;
        maxRunning = Math.max(maxRunning, running);
        started.resolve(runs);
        await new Promise<void>((r) => gates.push(r));
        running--;
      },
      { concurrency: 4 },
    );
    q.add('k');
    assert.equal(await started.promise, 1);
    started = deferred<number>();
    q.add('k'); // during processing: marked dirty, not run beside the first
    q.add('k');
    assert.equal(runs, 1);
    gates.shift()?.();
    assert.equal(await started.promise, 2, 'rerun once after the first ended');
    gates.shift()?.();
    await q.idle();
    assert.equal(maxRunning, 1);
    assert.equal(runs, 2);
    await q.stop();
  });

  it('retries failures with growing delays and forgets them after a success', async () => {
    const times: number[] = [];
    const errors: number[] = [];
    const succeeded = deferred();
    const q = new WorkQueue(
      () => {
        times.push(performance.now());
        if (times.length < 4) return Promise.reject(new Error('boom'));
        succeeded.resolve();
        return Promise.resolve();
      },
      { baseDelayMs: 10, maxDelayMs: 1000, onError: (_k, _e, attempt) => errors.push(attempt) },
    );
    q.add('x');
    // Retry timers are unref'd (they must not keep a stopping process alive): this bound keeps
    // the test's event loop running meanwhile.
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([
      succeeded.promise,
      new Promise(
        (_, reject) => (bound = setTimeout(() => reject(new Error('no success within 10 s')), 10_000)),
      ),
    ]);
    clearTimeout(bound);
    await q.idle();
    assert.deepEqual(errors, [1, 2, 3]);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? t));
    // 10, 20, 40 ms: a loaded machine can only make them longer.
    assert.ok((gaps[0] ?? 0) >= 9 && (gaps[1] ?? 0) >= 19 && (gaps[2] ?? 0) >= 39, `gaps ${gaps.join(',')}`);
    assert.equal(q.retryCount('x'), 0);
    await q.stop();
  });
});
