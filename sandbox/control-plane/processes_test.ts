// A supervised process is started again when it exits on its own (as kubelet restarts a pod's
// container), and not after its owner stopped it, nor once everything was killed at a signal.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { killAllNow, startProcess, supervise } from './processes.js';

/** Runs `test` with a log path in a temporary directory, removed after it. */
async function withLog<T>(test: (log: string, dir: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-supervise-'));
  try {
    return await test(path.join(dir, 'p.log'), dir);
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
      // Every start ran, but the last one: stop() may end it before it wrote its line.
      assert.ok(runs === p.restarts + 1 || runs === p.restarts, `${runs} runs, ${p.restarts} restarts`);
    }));
});

/**
 * Runs a Node program that starts `sleep` as a managed process, stops it itself at SIGTERM
 * (after 300 ms, as a graceful stop that first talks to the processes) and prints the signal
 * that ended it. `defer`: the program calls deferSignalsToOwner.
 */
async function signalledOwner(defer: boolean): Promise<string> {
  return withLog(async (log) => {
    const processes = fileURLToPath(new URL('./processes.js', import.meta.url));
    const program = `
      const { deferSignalsToOwner, startProcess } = await import(${JSON.stringify(processes)});
      const p = startProcess('sleeper', 'sleep', ['30'], ${JSON.stringify(log)});
      ${defer ? 'deferSignalsToOwner();' : ''}
      let stopping = false;
      process.on('SIGTERM', () => {
        if (stopping) return;
        stopping = true;
        setTimeout(async () => {
          const before = p.child.signalCode ?? 'running';
          await p.stop();
          console.log(before === 'running' ? p.child.signalCode : before);
          process.exit(0);
        }, 300);
      });
      console.log('ready');`;
    const owner = spawn(process.execPath, ['--input-type=module', '-e', program], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    owner.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.startsWith('ready\n') && !owner.killed) owner.kill('SIGTERM');
    });
    const timer = setTimeout(() => owner.kill('SIGKILL'), 10_000);
    await new Promise((resolve) => owner.once('exit', resolve));
    clearTimeout(timer);
    return out.replace('ready\n', '').trim();
  });
}

describe('deferSignalsToOwner', () => {
  it("leaves the processes running at a signal for the owner's own stop", async () => {
    assert.equal(await signalledOwner(true), 'SIGTERM', 'the owner stopped it');
    // Without it, the signal kills every process at once, before the owner's stop.
    assert.equal(await signalledOwner(false), 'SIGKILL');
  });
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
