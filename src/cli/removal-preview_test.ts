import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RemovalPlan } from '../harvester/removal-plan.js';
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
