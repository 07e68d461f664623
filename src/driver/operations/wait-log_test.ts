import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { createLogger } from '../../log/logger.js';
import { WaitLog } from './wait-log.js';

function capture() {
  const lines: string[] = [];
  const log = createLogger({
    level: 'debug',
    sink: { write: (level, line) => lines.push(`${level} ${line}`) },
  });
  return { lines, log };
}

/** Lets the timers' async callbacks (the probe) finish. */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe('the job log of a wait', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }));
  afterEach(() => mock.timers.reset());

  it('prints a line when the phase changes, not when only the detail does', () => {
    const { lines, log } = capture();
    const w = new WaitLog({ log, waitingFor: 'VM default/m1 to be Running', intervalMs: 15_000 });
    w.observe('no VM instance yet');
    mock.timers.tick(40);
    w.observe('VM instance Pending; Ready False: PodNotExists');
    mock.timers.tick(60);
    w.observe('VM instance Pending; Ready False: Other');
    mock.timers.tick(200);
    w.observe('VM instance Scheduling');
    w.stop();
    assert.deepEqual(lines, [
      'info no VM instance yet (after 0 ms)',
      'info VM instance Pending; Ready False: PodNotExists (after 40 ms)',
      'info VM instance Scheduling (after 300 ms)',
    ]);
  });

  it('says it is still waiting every interval without news, with the last state and the time waited', async () => {
    const { lines, log } = capture();
    const w = new WaitLog({ log, waitingFor: 'VM default/m1 to be Running', intervalMs: 15_000 });
    w.observe('VM instance Scheduling; PodScheduled False: Unschedulable (0/3 nodes are available)');
    mock.timers.tick(14_999);
    await settle();
    assert.equal(lines.length, 1, 'nothing before the interval');
    mock.timers.tick(1);
    await settle();
    mock.timers.tick(15_000);
    await settle();
    w.stop();
    mock.timers.tick(60_000);
    await settle();
    assert.deepEqual(lines.slice(1), [
      'info Still waiting for VM default/m1 to be Running after 15 s: VM instance Scheduling; PodScheduled False: Unschedulable (0/3 nodes are available)',
      'info Still waiting for VM default/m1 to be Running after 30 s: VM instance Scheduling; PodScheduled False: Unschedulable (0/3 nodes are available)',
    ]);
  });

  it('counts the interval from the last line printed, so a phase line is not followed at once by a progress line', async () => {
    const { lines, log } = capture();
    const w = new WaitLog({ log, waitingFor: 'x', intervalMs: 10_000 });
    w.observe('A');
    mock.timers.tick(9_000);
    w.observe('B');
    mock.timers.tick(9_000);
    await settle();
    assert.deepEqual(lines, ['info A (after 0 ms)', 'info B (after 9 s)']);
    mock.timers.tick(1_000);
    await settle();
    w.stop();
    assert.equal(lines[2], 'info Still waiting for x after 19 s: B');
  });

  it('adds what the probe reads, and survives a probe that fails', async () => {
    const { lines, log } = capture();
    let calls = 0;
    const w = new WaitLog({
      log,
      waitingFor: 'x',
      intervalMs: 1_000,
      probe: (state) => {
        calls++;
        if (calls === 2) return Promise.reject(new Error('boom'));
        return Promise.resolve(state === 'no VM instance yet' ? 'VM status Provisioning' : undefined);
      },
    });
    w.observe('no VM instance yet');
    for (let i = 0; i < 2; i++) {
      mock.timers.tick(1_000);
      await settle();
    }
    w.stop();
    assert.deepEqual(lines, [
      'info no VM instance yet (after 0 ms)',
      'info Still waiting for x after 1 s: no VM instance yet; VM status Provisioning',
      'debug reading more detail for the progress line failed: Error: boom',
      'info Still waiting for x after 2 s: no VM instance yet',
    ]);
  });
});
