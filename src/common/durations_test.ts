import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DurationError, formatDuration, parseDuration } from './durations.js';

describe('parseDuration', () => {
  it("reads Go's durations, and days", () => {
    const cases: Array<[string, number]> = [
      ['0', 0],
      ['0s', 0],
      ['1500ms', 1500],
      ['90s', 90_000],
      ['1h30m', 5_400_000],
      ['2h45m10s', 9_910_000],
      ['1.5h', 5_400_000],
      ['1.1h', 3_960_000],
      ['.5m', 30_000],
      ['1.m', 60_000],
      ['300us', 0.3],
      ['300µs', 0.3],
      ['7d', 604_800_000],
      [' 10m ', 600_000],
    ];
    for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  });

  it('refuses what Go refuses, and signs', () => {
    for (const text of ['', 'soon', '5 minutes', '1h 30m', '1hm', 'h', '.s', '1.5', '-1h', '+1h', '1H']) {
      assert.throws(() => parseDuration(text), DurationError, text);
    }
  });

  it('refuses a bare number but 0, unless it is to be read as seconds', () => {
    assert.throws(() => parseDuration('10'), /give a unit \(for example 10s or 10m\)/);
    assert.equal(parseDuration('45', { bareNumbers: 'seconds' }), 45_000);
    assert.equal(parseDuration('0', { bareNumbers: 'seconds' }), 0);
  });
});

describe('formatDuration', () => {
  it('reads well in a sentence, rounding down', () => {
    const cases: Array<[number, string]> = [
      [-5, '0 ms'],
      [850, '850 ms'],
      [2_000, '2 s'],
      [12_400, '12 s'],
      [119_999, '119 s'],
      [120_000, '2 min'],
      [125_000, '2 min 05 s'],
      [3_600_000, '60 min'],
      [7_200_000, '2 hours'],
      [47 * 3_600_000, '47 hours'],
      [2 * 86_400_000, '2 days'],
      [30 * 86_400_000 + 5, '30 days'],
    ];
    for (const [ms, text] of cases) assert.equal(formatDuration(ms), text, String(ms));
  });

  it('prints ages as kubectl does, changing unit at the same points', () => {
    assert.deepEqual(
      [850, 45_000, 12 * 60_000, 3 * 3_600_000, 5 * 86_400_000].map((ms) => formatDuration(ms, 'column')),
      ['0s', '45s', '12m', '3h', '5d'],
    );
  });
});
