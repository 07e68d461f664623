import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDuration } from '../common/durations.js';
import { createProgressDisplay, liveLine, plainLine } from './progress.js';

const event = (state: string, elapsedMs: number) => ({
  operation: 'create',
  waitingFor: 'VM default/m1 to be Running',
  state,
  elapsedMs,
});

describe('progress display', () => {
  it('formats elapsed times and lines', () => {
    assert.equal(formatDuration(850), '850 ms');
    assert.equal(formatDuration(12_400), '12 s');
    assert.equal(formatDuration(125_000), '2 min 05 s');
    assert.equal(plainLine('creating VM default/m1', 1234), '[   1.2 s] creating VM default/m1');
    assert.equal(
      liveLine({ label: 'waiting for X', state: 'Pending', elapsedMs: 3000 }, 0),
      '⠋ waiting for X — Pending (3 s)',
    );
    const long = liveLine({ label: 'x'.repeat(200), elapsedMs: 0 }, 1, 40);
    assert.equal(long.length, 39);
    assert.ok(long.endsWith('…'));
    assert.equal(liveLine({ label: 'x'.repeat(200), elapsedMs: 0 }, 1, 0).length, 100, 'an unknown width');
  });

  it('without a terminal writes one plain line per change, never control characters', () => {
    let clock = 0;
    const written: string[] = [];
    const display = createProgressDisplay({
      stream: { write: (t) => written.push(t) },
      tty: false,
      now: () => clock,
    });
    display.phase('creating VM default/m1');
    clock = 500;
    display.update(event('VM instance Pending', 100));
    display.update(event('VM instance Pending', 300));
    clock = 2500;
    display.update(event('VM instance Running', 2000));
    display.log('a warning');
    display.stop();
    assert.deepEqual(written, [
      '[   0.0 s] creating VM default/m1\n',
      '[   0.5 s] waiting for VM default/m1 to be Running: VM instance Pending\n',
      '[   2.5 s] waiting for VM default/m1 to be Running: VM instance Running\n',
      'a warning\n',
    ]);
  });

  it('on a terminal redraws one line in place and clears it at the end', () => {
    let clock = 0;
    const written: string[] = [];
    const display = createProgressDisplay({
      stream: { write: (t) => written.push(t), columns: 80 },
      tty: true,
      now: () => clock,
      tickMs: 60_000,
    });
    display.phase('removing VM default/m1');
    clock = 1000;
    display.update(event('VM instance Running', 400));
    display.log('note');
    display.stop();
    assert.deepEqual(written, [
      '\r\x1b[2K⠋ removing VM default/m1 (0 ms)',
      '\r\x1b[2K⠙ waiting for VM default/m1 to be Running — VM instance Running (400 ms)',
      '\r\x1b[2K',
      'note\n',
      '\r\x1b[2K⠹ waiting for VM default/m1 to be Running — VM instance Running (400 ms)',
      '\r\x1b[2K',
    ]);
  });
});
