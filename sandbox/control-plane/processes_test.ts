// A supervised process is started again when it exits on its own (as kubelet restarts a pod's
// container), and not after its owner stopped it, nor once everything was killed at a signal.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { killAllNow, startProcess, supervise } from './processes.js';

/** Runs `test` with a log path in a temporary directory, removed after it. */
async function withLog(test: (log: string, dir: string) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-supervise-'));
  try {
    await test(path.join(dir, 'p.log'), dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('supervise', () => {
  it('starts a process again each time it exits on its own, and never after stop()', () =>
    withLog(async (log) => {
      // Each run writes one line and exits at once, as a controller that lost its lease.
      const p = supervise(() => startProcess('p', 'sh', ['-c', 'echo run'], log), 50);
      for (let i = 0; i < 100 && p.restarts < 2; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(p.restarts >= 2, `restarted ${p.restarts} times`);
      await p.stop();
      await p.exited;
      const runsLogged = (): number =>
        fs
          .readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => l === 'run').length;
      const runs = runsLogged();
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(runsLogged(), runs, 'no run after stop');
      assert.equal(runs, p.restarts + 1);
    }));
});

// Last: killAllNow ends every process of this test process for good.
describe('supervise, once everything is killed at a signal', () => {
  it('does not start the process again (its owner is stopping and may have removed its directory)', () =>
    withLog(async (log, dir) => {
      const p = supervise(() => startProcess('p', 'sh', ['-c', 'echo run; exec sleep 30'], log), 50);
      for (let i = 0; i < 100 && !fs.readFileSync(log, 'utf8').includes('run'); i++)
        await new Promise((r) => setTimeout(r, 20));
      killAllNow();
      fs.rmSync(dir, { recursive: true, force: true }); // as the sandbox's cleanups do
      const ended = await Promise.race([
        p.exited,
        new Promise((r) => setTimeout(() => r('still supervised'), 2_000)),
      ]);
      assert.equal(ended, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(p.restarts, 0);
    }));
});
