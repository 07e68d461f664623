import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../errors.js';
import { formatDuration } from '../../common/durations.js';
import { parseDuration } from './durations.js';
import { renderTable } from './table.js';

describe('formatting', () => {
  it('tables: upper-case headers, padded columns, no trailing spaces', () => {
    assert.deepEqual(
      renderTable(
        ['name', 'state', 'ip'],
        [
          ['m1', 'Running', '10.0.0.1'],
          ['machine-2', 'Stopped', ''],
        ],
      ),
      ['NAME       STATE    IP', 'm1         Running  10.0.0.1', 'machine-2  Stopped'],
    );
  });

  it('ages as kubectl shows them', () => {
    assert.deepEqual(
      [45_000, 12 * 60_000, 3 * 3_600_000, 5 * 86_400_000].map((ms) => formatDuration(ms, 'column')),
      ['45s', '12m', '3h', '5d'],
    );
  });

  it('durations for flags', () => {
    assert.deepEqual(
      ['0', '0s', '90s', '10m', '2h', '7d'].map((d) => parseDuration(d, '--min-age')),
      [0, 0, 90_000, 600_000, 7_200_000, 604_800_000],
    );
    assert.throws(() => parseDuration('10', '--min-age'), /--min-age 10: give a unit/);
    assert.throws(() => parseDuration('soon', '--min-age'), UsageError);
  });
});
