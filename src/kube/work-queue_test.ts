import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WorkQueue } from './work-queue.js';

const tick = (ms = 5): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('WorkQueue', () => {
  it('merges repeated adds of a queued key into one reconcile', async () => {
    const seen: string[] = [];
    const q = new WorkQueue(
      async (k) => {
        seen.push(k);
        await tick();
      },
      { concurrency: 1 },
    );
    q.add('a');
    q.add('b');
    q.add('b');
    q.add('b');
    await q.idle();
    assert.deepEqual(seen, ['a', 'b']);
    await q.stop();
  });

  it('never runs one key twice at once, and reruns it when it changed meanwhile', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const q = new WorkQueue(
      async () => {
        running++;
        runs++;
        maxRunning = Math.max(maxRunning, running);
        await tick(20);
        running--;
      },
      { concurrency: 4 },
    );
    q.add('k');
    await tick(2);
    q.add('k'); // during processing: marked dirty
    q.add('k');
    await tick(80);
    await q.idle();
    assert.equal(maxRunning, 1);
    assert.equal(runs, 2);
    await q.stop();
  });

  it('retries failures with growing delays and forgets them after a success', async () => {
    const times: number[] = [];
    let calls = 0;
    const errors: number[] = [];
    const q = new WorkQueue(
      () => {
        times.push(Date.now());
        calls++;
        return calls < 4 ? Promise.reject(new Error('boom')) : Promise.resolve();
      },
      { baseDelayMs: 10, maxDelayMs: 1000, onError: (_k, _e, attempt) => errors.push(attempt) },
    );
    q.add('x');
    while (calls < 4) await tick(5);
    assert.deepEqual(errors, [1, 2, 3]);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? t));
    assert.ok((gaps[1] ?? 0) >= 18 && (gaps[2] ?? 0) >= 36, `gaps ${gaps.join(',')}`);
    assert.equal(q.retryCount('x'), 0);
    await q.stop();
  });
});
