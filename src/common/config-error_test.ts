import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from './config-error.js';

describe('ConfigError', () => {
  it('lists every problem of a machine configuration, each on its own line', () => {
    const err = new ConfigError([
      { flag: '--harvester-disk-size', message: '--harvester-disk-size: is required' },
      { flag: '--harvester-cpu-count', message: '--harvester-cpu-count: "x" is not a number' },
    ]);
    assert.equal(
      err.message,
      'invalid machine configuration (2 problems):\n  --harvester-disk-size: is required\n' +
        '  --harvester-cpu-count: "x" is not a number',
    );
    assert.equal(err.problems.length, 2);
    assert.equal(err.name, 'ConfigError');
  });

  it('says "1 problem" for one', () => {
    const err = new ConfigError([
      { flag: '--harvester-disk-size', message: '--harvester-disk-size: is required' },
    ]);
    assert.equal(
      err.message,
      'invalid machine configuration (1 problem):\n  --harvester-disk-size: is required',
    );
  });

  it('keeps a message as given, with no problems listed', () => {
    const err = new ConfigError('--log-level: "loud" is not debug, info, warn or error');
    assert.equal(err.message, '--log-level: "loud" is not debug, info, warn or error');
    assert.deepEqual(err.problems, []);
    assert.ok(err instanceof Error);
    assert.equal(err.name, 'ConfigError');
  });
});
