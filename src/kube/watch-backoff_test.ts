// The pacing rule shared by waitFor and the Informer, on injected randomness (no clock needed).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WatchBackoff, pause } from './watch-backoff.js';

describe('WatchBackoff', () => {
  it('doubles from the initial pause up to the cap, jittered between half and all of it', () => {
    const high = new WatchBackoff({ initialMs: 500, maxMs: 10_000 }, () => 1);
    assert.deepEqual(
      Array.from({ length: 8 }, () => high.failed()),
      [500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000],
    );
    const low = new WatchBackoff({ initialMs: 500, maxMs: 10_000 }, () => 0);
    assert.deepEqual(
      Array.from({ length: 3 }, () => low.failed()),
      [250, 500, 1_000],
    );
  });

  it('a watch that ends sooner than minWatchMs without events is a failure, from the second in a row', () => {
    const b = new WatchBackoff({ initialMs: 500, minWatchMs: 1_000 }, () => 1);
    assert.equal(b.watchEnded(3, 0), 0, 'the first is re-opened at once: it may be a server going away');
    assert.equal(b.watchEnded(3, 0), 500);
    assert.equal(b.watchEnded(999, 0), 1_000);
    assert.equal(b.failureCount, 2);
  });

  it('after a failure, a short watch backs off at once', () => {
    const b = new WatchBackoff({ initialMs: 500, minWatchMs: 1_000 }, () => 1);
    assert.equal(b.failed(), 500);
    assert.equal(b.watchEnded(3, 0), 1_000);
  });

  it('a watch with events, or one that lasted, resumes at once and forgets the failures', () => {
    const b = new WatchBackoff({ initialMs: 500, minWatchMs: 1_000 }, () => 1);
    b.failed();
    b.failed();
    assert.equal(b.watchEnded(2, 1), 0);
    assert.equal(b.failureCount, 0);
    assert.equal(b.failed(), 500, 'the next failure starts over');
    assert.equal(b.watchEnded(1_000, 0), 0);
    assert.equal(b.failureCount, 0);
    assert.equal(b.watchEnded(3, 0), 0, 'and a short watch is again re-opened once at once');
  });

  it('never overflows however many failures', () => {
    const b = new WatchBackoff({ initialMs: 500, maxMs: 30_000 }, () => 1);
    let last = 0;
    for (let i = 0; i < 5_000; i++) last = b.failed();
    assert.equal(last, 30_000);
  });

  it('pause ends early when its signal aborts', async () => {
    const ac = new AbortController();
    const started = performance.now();
    const pausing = pause(600_000, ac.signal);
    ac.abort();
    await pausing;
    assert.ok(performance.now() - started < 1_000);
    await pause(600_000, ac.signal); // already aborted: at once
  });
});
