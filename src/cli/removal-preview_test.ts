import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRemoval, type RemovalPlan } from '../harvester/removal-plan.js';
import { pvc, pvcVolume, vmWith } from '../harvester/testing/fixtures.js';
import type { LoadBalancer } from '../harvester/load-balancers.js';
import { loadBalancerPreview, removalPreview, renderRemovalPreview } from './removal-preview.js';

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
  it('rm --dry-run --whole-cluster shows a volume of uncertain ownership as kept, naming why (ADR 0021)', () => {
    const vm = vmWith('c1-pool1-x1', 'default', [pvcVolume('disk-0', 'c1-pool1-x1-disk-0-abcde')]);
    const contested = pvc(`pvc-${'1'.repeat(8)}-1111-1111-1111-${'1'.repeat(12)}`, 'default', {
      'guestcluster.harvesterhci.io/name': 'c1',
    });
    contested.metadata.annotations = { 'harvester-machine.io/guest-claimants': 'c1,c2' };
    const own = pvc(`pvc-${'2'.repeat(8)}-2222-2222-2222-${'2'.repeat(12)}`, 'default', {
      'guestcluster.harvesterhci.io/name': 'c1',
    });
    own.metadata.annotations = {
      'harvester-machine.io/guest-claimants': 'c1',
      'harvester-machine.io/ownership-evidence': 'corroborated: named as the Harvester CSI driver names it',
    };
    const wholePlan = planRemoval({
      vm,
      pvcs: [pvc('c1-pool1-x1-disk-0-abcde', 'default'), contested, own],
      vms: [vm],
      removeAll: true,
      clusterName: 'c1',
    });
    const preview = removalPreview({
      machine: 'c1-pool1-x1',
      namespace: 'default',
      vmName: 'c1-pool1-x1',
      plan: wholePlan,
      wholeClusterAssumed: true,
    });
    assert.deepEqual(
      preview.delete.persistentVolumeClaims.map((p) => p.name).sort(),
      ['c1-pool1-x1-disk-0-abcde', own.metadata.name].sort(),
    );
    const text = renderRemovalPreview(preview, '/store/machines/c1-pool1-x1').join('\n');
    assert.match(
      text,
      new RegExp(
        `keep:[\\s\\S]*PersistentVolumeClaim default/${contested.metadata.name}\\n\\s+why: named by guest clusters c1, c2: ownership contested; never deleted automatically: delete it by hand`,
      ),
    );
  });

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
      pvcs: ['m1-disk-0', 'shared-data', 'db-of-vm2'].map((n) => pvc(n, 'default')),
      vms: [vm],
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

describe("removal preview: the guest cluster's load balancers", () => {
  const lb = (
    name: string,
    cluster: string,
    extra: Partial<LoadBalancer['metadata']> = {},
  ): LoadBalancer => ({
    metadata: {
      name,
      namespace: 'default',
      labels: { 'cloudprovider.harvesterhci.io/cluster': cluster },
      ...extra,
    },
    spec: { workloadType: 'cluster', ipam: 'pool' },
    status: { allocatedAddress: { ip: '192.0.2.10', ipPool: 'p' } },
  });
  const vm = (name: string, cluster: string) => ({
    metadata: { name, namespace: 'default', labels: { 'guestcluster.harvesterhci.io/name': cluster } },
  });
  const view = (serverVersion: string) => ({
    loadBalancers: [
      lb('c1-a', 'c1'),
      lb('c2-a', 'c2'),
      lb('c1-gone', 'c1', { deletionTimestamp: '2026-01-01T00:00:00Z' }),
    ],
    vms: [vm('c1-pool1-x1', 'c1'), vm('c1-pool1-x2', 'c1')],
    serverVersion,
  });
  const input = { cluster: 'c1', namespace: 'default', vmName: 'c1-pool1-x1' };

  it("a whole-cluster removal: the cluster's go with it, by the controller or by Harvester itself, never by this removal", () => {
    const old = loadBalancerPreview({ ...input, view: view('v1.7.1'), wholeCluster: true });
    assert.deepEqual(
      old.delete?.map((i) => i.name),
      ['c1-a'],
    );
    assert.match(
      old.delete?.[0]?.reason ?? '',
      /holding 192\.0\.2\.10 from IP pool p; deleted with guest cluster c1 once its last VM is gone \(1 other VM\(s\) of it are left\), by harvester-machine-controller \(Harvester v1\.7\.1 leaves them/,
    );
    assert.match(old.delete?.[0]?.reason ?? '', /not by this removal$/);
    const recent = loadBalancerPreview({ ...input, view: view('v1.8.1'), wholeCluster: true });
    assert.match(
      recent.delete?.[0]?.reason ?? '',
      /by Harvester itself \(Harvester v1\.8\.1 deletes them itself/,
    );
    const preview = removalPreview({
      machine: 'm',
      namespace: 'default',
      vmName: 'c1-pool1-x1',
      plan: { ...plan, removeAll: true },
      wholeClusterAssumed: true,
      loadBalancers: old,
    });
    const text = renderRemovalPreview(preview, '/s');
    assert.ok(text.includes('with the guest cluster, once its last VM is gone:'));
    assert.ok(text.includes('  LoadBalancer default/c1-a'));
    assert.match(
      text.at(-1) ?? '',
      /1 load balancer\(s\) go with the guest cluster\. Nothing was changed\.$/,
    );
  });

  it('any other removal keeps them; a credential that may not list them is said so', () => {
    const plain = loadBalancerPreview({ ...input, view: view('v1.7.1'), wholeCluster: false });
    assert.equal(plain.delete, undefined);
    assert.deepEqual(
      plain.keep?.map((i) => i.name),
      ['c1-a'],
    );
    assert.match(plain.keep?.[0]?.reason ?? '', /only this machine is removed/);
    const ambiguous = loadBalancerPreview({
      ...input,
      cluster: 'kubernetes',
      view: { ...view('v1.7.1'), loadBalancers: [lb('k-a', 'kubernetes')] },
      wholeCluster: true,
    });
    assert.equal(ambiguous.delete, undefined);
    assert.match(ambiguous.keep?.[0]?.reason ?? '', /names no cluster in particular/);
    const denied = loadBalancerPreview({ ...input, view: { notListed: 'forbidden' }, wholeCluster: true });
    const preview = removalPreview({
      machine: 'm',
      namespace: 'default',
      vmName: 'c1-pool1-x1',
      plan,
      wholeClusterAssumed: false,
      loadBalancers: denied,
    });
    assert.equal(preview.loadBalancersNotListed, 'forbidden');
    assert.ok(renderRemovalPreview(preview, '/s').includes('(load balancers not looked at: forbidden)'));
  });
});
