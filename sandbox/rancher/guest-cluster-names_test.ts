// Machine names of a guest cluster's pool: Rancher's shape, never one twice (5 hex characters
// per name repeated within a 200-machine pool about once in 50 and crashed the benchmark).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { poolMachineNames } from './guest-cluster.js';

describe('poolMachineNames', () => {
  it('gives every machine of a large pool its own name, in Rancher’s shape', () => {
    const names = poolMachineNames('bench-rancher', { name: 'wk', quantity: 20_000 });
    assert.equal(names.length, 20_000);
    assert.equal(new Set(names).size, 20_000);
    for (const n of names.slice(0, 100))
      assert.match(n, /^bench-rancher-wk-[0-9a-f]{8}-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('keeps fixed names and draws the rest', () => {
    const names = poolMachineNames('c', { name: 'p', quantity: 3, machineNames: ['c-p-one', 'c-p-two'] });
    assert.deepEqual(names.slice(0, 2), ['c-p-one', 'c-p-two']);
    assert.match(names[2] ?? '', /^c-p-[0-9a-f]{8}-[a-z0-9]{5}$/);
  });
});
