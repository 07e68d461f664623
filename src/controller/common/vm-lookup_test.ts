import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../kube/resources.js';
import { rancherInstanceName } from '../../rancher/names.js';
import { matchVmByLabels, vmNameCandidates } from './vm-lookup.js';

const vm = (name: string, labels: Record<string, string>): KubeObject => ({
  metadata: { name, namespace: 'default', labels },
});
const LONG = `${'c'.repeat(30)}-${'pool'.repeat(8)}-7f8d9c5b6-x2v9q`;

describe('vmNameCandidates', () => {
  it('is the plain name alone when Rancher did not hash it', () => {
    assert.deepEqual(vmNameCandidates('c1-pool1-abc-xyz'), ['c1-pool1-abc-xyz']);
  });
  it('adds the hashed name for names of 64+ characters', () => {
    assert.ok(LONG.length > 63);
    assert.deepEqual(vmNameCandidates(LONG), [LONG, rancherInstanceName(LONG)]);
  });
});

describe('matchVmByLabels', () => {
  const cluster = 'c1';
  it('finds the VM whose vmName label is a candidate, only in this guest cluster', () => {
    const hashed = rancherInstanceName(LONG);
    const vms = [
      vm('other', { 'guestcluster.harvesterhci.io/name': 'c2', 'harvesterhci.io/vmName': hashed }),
      vm('renamed', { 'guestcluster.harvesterhci.io/name': cluster, 'harvesterhci.io/vmName': hashed }),
    ];
    const r = matchVmByLabels(vms, LONG, cluster);
    assert.equal(r.kind, 'found');
    assert.equal(r.kind === 'found' && r.vm.metadata.name, 'renamed');
  });
  it('matches a long name hashed another way by its 56-character prefix, when unique', () => {
    const vms = [vm(`${LONG.slice(0, 56)}-zzzzzz`, { 'guestcluster.harvesterhci.io/name': cluster })];
    assert.equal(matchVmByLabels(vms, LONG, cluster).kind, 'found');
    const two = [...vms, vm(`${LONG.slice(0, 56)}-yyyyyy`, { 'guestcluster.harvesterhci.io/name': cluster })];
    assert.deepEqual(matchVmByLabels(two, LONG, cluster), {
      kind: 'ambiguous',
      names: [`${LONG.slice(0, 56)}-zzzzzz`, `${LONG.slice(0, 56)}-yyyyyy`],
    });
  });
  it('never guesses for short names', () => {
    const vms = [vm('c1-pool1-abc-other', { 'guestcluster.harvesterhci.io/name': cluster })];
    assert.deepEqual(matchVmByLabels(vms, 'c1-pool1-abc-xyz', cluster), { kind: 'none' });
  });
});
