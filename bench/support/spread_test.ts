import assert from 'node:assert/strict';
import { test } from 'node:test';
import { median, showMs, spread } from './spread.js';

test('median of an odd and an even count, ignoring what is not a number', () => {
  assert.equal(median([9, 1, 5]), 5);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([NaN, 7]), 7);
  assert.ok(Number.isNaN(median([])));
});

test('spread gives the lowest and highest beside the median', () => {
  assert.deepEqual(spread([12340, 5100, 7619]), { median: 7619, min: 5100, max: 12340, n: 3 });
});

test('showMs says when a figure is a single run', () => {
  assert.equal(showMs([7619.4, 5100, 9800.6]), '7619 ms (5100–9801)');
  assert.equal(showMs([12340]), '12340 ms (1 run)');
  assert.equal(showMs([]), '? ms');
});
