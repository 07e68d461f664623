import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRemoval, type RemovalPlan } from '../harvester/removal-plan.js';
import { pvc, pvcVolume, vmWith } from '../harvester/testing/fixtures.js';
import { removalPreview, renderRemovalPreview } from './removal-preview.js';

const plan: RemovalPlan = {
  vmName: 'c1-pool1-x1',
  namespace: 'default',
  removeAll: false,
  pvcs: [{ name: 'c1-pool1-x1-disk-0-abcde', reason: 'boot/data disk disk-0 of VM default/c1-pool1-x1' }],
  kept: [
    { name: 'pvc-1', reason: 'hot-plugged volume (guest workload data): kept' },
    { name: 'elsewhere/pvc-2', reason: 'in namespace elsewhere, not the VM namespace default' },
  ],
  secrets: [{ name: 'c1-pool1-x1-cloudinit', reason: 'cloud-init Secret owned by VM default/c1-pool1-x1' }],
  refused: [],
};

describe('removal preview', () => {
  it('lists the VM, PVCs and Secrets that go and the PVCs that stay, each with its reason', () => {
    const preview = removalPreview({
      machine: 'c1-pool1-x1',
      namespace: 'default',
      vmName: 'c1-pool1-x1',
      plan,
      wholeClusterAssumed: false,
    });
    assert.deepEqual(preview.vm, { namespace: 'default', name: 'c1-pool1-x1', exists: true });
    assert.equal(preview.delete.virtualMachines.length, 1);
    assert.match(preview.delete.virtualMachines[0]?.reason ?? '', /only this machine is removed/);
    assert.deepEqual(preview.delete.persistentVolumeClaims, [
      { namespace: 'default', name: 'c1-pool1-x1-disk-0-abcde', reason: plan.pvcs[0]?.reason },
    ]);
    assert.deepEqual(
      preview.delete.secrets.map((s) => s.name),
      ['c1-pool1-x1-cloudinit'],
    );
    assert.deepEqual(
      preview.keep.persistentVolumeClaims.map((k) => `${k.namespace}/${k.name}`),
      ['default/pvc-1', 'elsewhere/pvc-2'],
    );

    const text = renderRemovalPreview(preview, '/store/machines/c1-pool1-x1');
    assert.deepEqual(text.slice(0, 4), [
      'Dry run: removing machine c1-pool1-x1 would',
      'delete:',
      '  VirtualMachine default/c1-pool1-x1',
      `      why: ${preview.delete.virtualMachines[0]?.reason ?? ''}`,
    ]);
    assert.ok(text.includes('  PersistentVolumeClaim default/c1-pool1-x1-disk-0-abcde'));
    assert.ok(text.includes('  Secret default/c1-pool1-x1-cloudinit'));
    assert.ok(text.includes('keep:'));
    assert.match(
      text.at(-1) ?? '',
      /1 volume\(s\) and 1 Secret\(s\) deleted, 2 volume\(s\) kept\. Nothing was changed\.$/,
    );
  });

  it('says why everything goes on a whole-cluster removal, assumed or set by Rancher', () => {
    const whole = { ...plan, removeAll: true };
    const assumed = removalPreview({
      machine: 'm',
      namespace: 'default',
      vmName: 'c1-pool1-x1',
      plan: whole,
      wholeClusterAssumed: true,
    });
    assert.match(
      assumed.delete.virtualMachines[0]?.reason ?? '',
      /--whole-cluster: harvesterhci.io\/removeAllPersistentVolumeClaims="true" assumed/,
    );
    const real = removalPreview({
      machine: 'm',
      namespace: 'default',
      vmName: 'c1-pool1-x1',
      plan: whole,
      wholeClusterAssumed: false,
    });
    assert.match(real.delete.virtualMachines[0]?.reason ?? '', /Rancher set/);
  });

  it('shows the claim names it refuses, as written, with the reason', () => {
    const vm = vmWith('m1', 'default', [
      pvcVolume('disk-0', 'm1-disk-0'),
      pvcVolume('disk-1', 'shared-data,db-of-vm2'),
      pvcVolume('disk-2', 'other/db'),
      pvcVolume('disk-3', 'gone'),
    ]);
    const hostile = planRemoval({
      vm,
      pvcsInNamespace: ['m1-disk-0', 'shared-data', 'db-of-vm2'].map((n) => pvc(n, 'default')),
      vmsInNamespace: [vm],
      removeAll: false,
      clusterName: 'c1',
    });
    const preview = removalPreview({
      machine: 'm1',
      namespace: 'default',
      vmName: 'm1',
      plan: hostile,
      wholeClusterAssumed: false,
    });
    assert.deepEqual(
      preview.delete.persistentVolumeClaims.map((p) => p.name),
      ['m1-disk-0'],
    );
    assert.deepEqual(
      preview.refused.claimNames.map((r) => `${r.namespace}|${r.name}`),
      ['default|shared-data,db-of-vm2', 'default|other/db', 'default|gone'],
    );
    const text = renderRemovalPreview(preview, '/s/m1');
    const at = text.indexOf('refuse (claim names of the VM that are no PVC of its namespace):');
    assert.ok(at > 0, text.join('\n'));
    assert.match(
      text[at + 1] ?? '',
      /^ {2}claim name "shared-data,db-of-vm2" is no PVC name: not a DNS-1123 subdomain/,
    );
    assert.equal(text[at + 3], '  claim name "gone" names no PVC in namespace default; never deleted');
    assert.match(text.at(-1) ?? '', /0 volume\(s\) kept, 3 claim name\(s\) refused\. Nothing was changed\.$/);
  });

  it('a VM already gone: nothing on Harvester, only the store entry', () => {
    const preview = removalPreview({
      machine: 'm',
      namespace: 'ns',
      vmName: 'm',
      plan: undefined,
      wholeClusterAssumed: false,
    });
    assert.equal(preview.vm.exists, false);
    assert.deepEqual(preview.delete, { virtualMachines: [], persistentVolumeClaims: [], secrets: [] });
    assert.match(
      renderRemovalPreview(preview, '/s/m')[0] ?? '',
      /delete nothing on Harvester: VM ns\/m does not exist/,
    );
  });
});
