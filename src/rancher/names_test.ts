import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { machineDeploymentName, rancherInstanceName, safeConcatName } from './names.js';

const a = (n: number): string => 'a'.repeat(n);

describe('safeConcatName (wrangler test vectors)', () => {
  it('keeps names under 64 characters', () => {
    assert.equal(safeConcatName(a(63)), a(63));
    assert.equal(safeConcatName('first', 'second', 'third'), 'first-second-third');
    assert.equal(safeConcatName(), '');
  });
  it('cuts at 57 and appends 5 hex characters of the sha256', () => {
    assert.equal(safeConcatName(a(64)), `${a(57)}-ffe05`);
    assert.equal(safeConcatName(a(32), a(32)), `${a(32)}-${a(24)}-da5ed`);
  });
  it('cuts one more when the 57th character is not alphanumeric', () => {
    assert.equal(safeConcatName(`${a(56)}-${a(7)}`), `${a(56)}-768c62`);
    assert.equal(safeConcatName(`${a(55)}--${a(7)}`), `${a(55)}--9e8cfe`);
  });
});

describe('rancherInstanceName', () => {
  it('replaces dots before hashing, as Rancher does for hostnames', () => {
    assert.equal(rancherInstanceName('a.b-c'), 'a-b-c');
    const long = `${a(40)}.${a(40)}`;
    assert.equal(rancherInstanceName(long), safeConcatName(long.replace('.', '-')));
    assert.ok(rancherInstanceName(long).length <= 63);
  });
  it('names machine deployments cluster-pool', () => {
    assert.equal(machineDeploymentName('c1', 'pool1'), 'c1-pool1');
  });
});
