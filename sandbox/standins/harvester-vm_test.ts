// Harvester's VM controller stand-in against a real apiserver
// (docs/upstream/harvester-kubevirt.md#harvester-vm-controller).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { createNamespace } from '../control-plane/access.js';
import { Annotations, Finalizers } from './names.js';
import {
  driverVm,
  garbageCollectorKnowsVms,
  gone,
  importedImage,
  useHarvester,
  waitUntil,
} from './testing.js';
import type { PersistentVolumeClaim, VirtualMachine } from './types.js';

describe('Harvester VM controller stand-in', () => {
  const s = useHarvester({ name: 'standins-hvm' });

  const pvcBound = (client = s.client, namespace: string, name: string) =>
    waitUntil<PersistentVolumeClaim>(
      client,
      Resources.pvc,
      { namespace, name },
      `PVC ${name} Bound`,
      (p) => p?.status?.phase === 'Bound',
    );

  it('creates each templated PVC once, exactly as templated: no ownerReferences, no labels', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'pvc-create');
    const image = await importedImage(client, ns, 'image-a');
    const sc = image.status?.storageClassName ?? '';
    const vm = driverVm(ns, 'vm1', {
      disks: [{ name: 'vm1-disk-0-abcde', storage: '1Gi', storageClassName: sc, imageId: `${ns}/image-a` }],
    });
    await client.create(Resources.virtualMachine, vm);
    // Bound by Longhorn and finalized by Harvester's PVC controller, independently.
    const pvc = await waitUntil<PersistentVolumeClaim>(
      client,
      Resources.pvc,
      { namespace: ns, name: 'vm1-disk-0-abcde' },
      'PVC Bound with both finalizers',
      (p) => p?.status?.phase === 'Bound' && p.metadata.finalizers?.length === 2,
    );
    assert.ok(pvc);
    assert.equal(pvc.metadata.ownerReferences, undefined);
    assert.equal(pvc.metadata.labels, undefined);
    // The template's annotation, and kube-controller-manager's PV binder's own (provisioner, binding).
    assert.deepEqual(pvc.metadata.annotations, {
      [Annotations.imageId]: `${ns}/image-a`,
      'pv.kubernetes.io/bind-completed': 'yes',
      'pv.kubernetes.io/bound-by-controller': 'yes',
      'volume.beta.kubernetes.io/storage-provisioner': 'driver.longhorn.io',
      'volume.kubernetes.io/storage-provisioner': 'driver.longhorn.io',
    });
    assert.equal(pvc.spec.volumeName, `pvc-${pvc.metadata.uid ?? ''}`);
    assert.deepEqual(pvc.spec.accessModes, ['ReadWriteMany']);
    assert.equal(pvc.spec.volumeMode, 'Block');
    assert.equal(pvc.spec.storageClassName, sc);
    assert.deepEqual(pvc.spec.resources, { requests: { storage: '1Gi' } });
    assert.deepEqual(pvc.status?.capacity, { storage: '1Gi' });
    assert.deepEqual(pvc.metadata.finalizers, [Finalizers.pvcProtection, Finalizers.harvesterPvc]);

    // Another change of the VM: the PVC is neither re-created nor touched.
    await client.patch(
      Resources.virtualMachine,
      { namespace: ns, name: 'vm1' },
      { metadata: { labels: { touched: 'yes' } } },
    );
    await standIns.idle();
    const again = await client.get<PersistentVolumeClaim>(Resources.pvc, {
      namespace: ns,
      name: 'vm1-disk-0-abcde',
    });
    assert.equal(again.metadata.uid, pvc.metadata.uid);
    assert.equal(again.metadata.resourceVersion, pvc.metadata.resourceVersion);
    const all = await client.list(Resources.pvc, { namespace: ns });
    assert.equal(all.items.length, 1);
  });

  it('grows a PVC when the template asks for more, and never shrinks it', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'pvc-grow');
    const withSize = (storage: string) =>
      driverVm(ns, 'vm2', { disks: [{ name: 'vm2-data', storage, storageClassName: 'harvester-longhorn' }] })
        .metadata.annotations?.[Annotations.volumeClaimTemplates] ?? '';
    await client.create(
      Resources.virtualMachine,
      driverVm(ns, 'vm2', {
        disks: [{ name: 'vm2-data', storage: '1Gi', storageClassName: 'harvester-longhorn' }],
      }),
    );
    await pvcBound(client, ns, 'vm2-data');
    const setTemplate = (storage: string) =>
      client.patch(
        Resources.virtualMachine,
        { namespace: ns, name: 'vm2' },
        {
          metadata: { annotations: { [Annotations.volumeClaimTemplates]: withSize(storage) } },
        },
      );
    await setTemplate('2Gi');
    const grown = await waitUntil<PersistentVolumeClaim>(
      client,
      Resources.pvc,
      { namespace: ns, name: 'vm2-data' },
      'PVC grown to 2Gi',
      (p) => p?.spec.resources?.requests?.storage === '2Gi' && p.status?.capacity?.storage === '2Gi',
    );
    assert.ok(grown);
    await setTemplate('1536Mi');
    await standIns.idle();
    const after = await client.get<PersistentVolumeClaim>(Resources.pvc, { namespace: ns, name: 'vm2-data' });
    assert.equal(after.spec.resources?.requests?.storage, '2Gi');
  });

  it('skips a PVC whose image does not exist, without retrying until the VM changes', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'pvc-noimage');
    await client.create(
      Resources.virtualMachine,
      driverVm(ns, 'vm3', { disks: [{ name: 'vm3-disk-0-zzzzz', storage: '1Gi', imageId: `${ns}/later` }] }),
    );
    await waitUntil<VirtualMachine>(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'vm3' },
      'VM finalizer',
      (v) => (v?.metadata.finalizers ?? []).includes(Finalizers.harvesterVmCleanup),
    );
    await standIns.idle();
    assert.equal(await client.find(Resources.pvc, { namespace: ns, name: 'vm3-disk-0-zzzzz' }), undefined);
    await importedImage(client, ns, 'later');
    await standIns.idle();
    assert.equal(
      await client.find(Resources.pvc, { namespace: ns, name: 'vm3-disk-0-zzzzz' }),
      undefined,
      'no requeue on image creation',
    );
    await client.patch(
      Resources.virtualMachine,
      { namespace: ns, name: 'vm3' },
      { metadata: { labels: { nudge: '1' } } },
    );
    await waitUntil(
      client,
      Resources.pvc,
      { namespace: ns, name: 'vm3-disk-0-zzzzz' },
      'PVC created after a VM change',
      (p) => p !== undefined,
    );
  });

  it('records the run strategy in harvesterhci.io/vmRunStrategy, except for Halted', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'runstrategy');
    await client.create(Resources.virtualMachine, driverVm(ns, 'rerun'));
    await client.create(Resources.virtualMachine, driverVm(ns, 'halted', { runStrategy: 'Halted' }));
    const vm = await waitUntil<VirtualMachine>(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'rerun' },
      'annotation',
      (v) =>
        v?.metadata.annotations?.[Annotations.vmRunStrategy] === 'RerunOnFailure' &&
        (v.metadata.finalizers ?? []).length === 2,
    );
    // Both controllers' finalizers, as on a real Harvester VM
    // (docs/upstream/harvester-kubevirt.md#example-vm).
    assert.deepEqual(
      [...(vm?.metadata.finalizers ?? [])].sort(),
      [Finalizers.kubevirtVmController, Finalizers.harvesterVmCleanup].sort(),
    );
    await standIns.idle();
    const halted = await client.get<VirtualMachine>(Resources.virtualMachine, {
      namespace: ns,
      name: 'halted',
    });
    assert.equal(halted.metadata.annotations?.[Annotations.vmRunStrategy], undefined);
  });

  it('on VM removal deletes exactly the PVCs named in removedPersistentVolumeClaims, then drops its finalizer', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'pvc-remove');
    const disks = [
      { name: 'vm4-boot', storage: '1Gi', storageClassName: 'harvester-longhorn' },
      { name: 'vm4-keep', storage: '1Gi', storageClassName: 'harvester-longhorn' },
    ];
    await client.create(
      Resources.virtualMachine,
      driverVm(ns, 'vm4', {
        disks,
        annotations: { [Annotations.removedPersistentVolumeClaims]: ' vm4-boot , ,not-there,' },
      }),
    );
    const other = await s.standIns.csi.createVolume({ namespace: ns, size: '1Gi' });
    for (const name of ['vm4-boot', 'vm4-keep', other]) await pvcBound(client, ns, name);
    await waitUntil<VirtualMachine>(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'vm4' },
      'VM running',
      (v) => v?.status?.printableStatus === 'Running',
    );
    await garbageCollectorKnowsVms(client);
    await client.delete(
      Resources.virtualMachine,
      { namespace: ns, name: 'vm4' },
      { propagationPolicy: 'Foreground' },
    );
    await waitUntil(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'vm4' },
      'VM gone',
      gone,
      30_000,
    );
    await waitUntil(
      client,
      Resources.pvc,
      { namespace: ns, name: 'vm4-boot' },
      'removed PVC gone',
      gone,
      30_000,
    );
    const left = await client.list<KubeObject>(Resources.pvc, { namespace: ns });
    assert.deepEqual(left.items.map((p) => p.metadata.name).sort(), [other, 'vm4-keep'].sort());
    assert.ok(left.items.every((p) => p.metadata.deletionTimestamp === undefined));
  });

  it('holdRemoval keeps the VM Terminating with its Harvester finalizer until released', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'hold');
    await client.create(
      Resources.virtualMachine,
      driverVm(ns, 'vm5', {
        disks: [{ name: 'vm5-boot', storage: '1Gi', storageClassName: 'harvester-longhorn' }],
        annotations: { [Annotations.removedPersistentVolumeClaims]: 'vm5-boot' },
      }),
    );
    await pvcBound(client, ns, 'vm5-boot');
    await waitUntil<VirtualMachine>(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'vm5' },
      'VM finalizer',
      (v) => (v?.metadata.finalizers ?? []).includes(Finalizers.harvesterVmCleanup),
    );
    await garbageCollectorKnowsVms(client);
    standIns.faults.holdRemoval(ns, 'vm5');
    await client.delete(
      Resources.virtualMachine,
      { namespace: ns, name: 'vm5' },
      { propagationPolicy: 'Foreground' },
    );
    // KubeVirt's part completes (VMI gone, its finalizer off); Harvester's stays. KubeVirt
    // writes the status after it drops its finalizer (as virt-controller does): wait for both.
    const onlyHarvesters = (v: VirtualMachine | undefined): boolean =>
      JSON.stringify(v?.metadata.finalizers) === JSON.stringify([Finalizers.harvesterVmCleanup]);
    const held = await waitUntil<VirtualMachine>(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'vm5' },
      'only the Harvester finalizer left, and the status Terminating',
      (v) => onlyHarvesters(v) && v?.status?.printableStatus === 'Terminating',
      30_000,
    );
    assert.ok(held?.metadata.deletionTimestamp);
    await standIns.idle();
    const pvc = await client.get<PersistentVolumeClaim>(Resources.pvc, { namespace: ns, name: 'vm5-boot' });
    assert.equal(pvc.metadata.deletionTimestamp, undefined, 'the held handler deleted nothing');
    const still = await client.get<VirtualMachine>(Resources.virtualMachine, { namespace: ns, name: 'vm5' });
    assert.ok(onlyHarvesters(still), `held: ${JSON.stringify(still.metadata.finalizers)}`);
    assert.equal(still.status?.printableStatus, 'Terminating');
    standIns.faults.releaseRemoval(ns, 'vm5');
    await waitUntil(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'vm5' },
      'VM gone after release',
      gone,
      30_000,
    );
    await waitUntil(
      client,
      Resources.pvc,
      { namespace: ns, name: 'vm5-boot' },
      'PVC gone after release',
      gone,
      30_000,
    );
  });
});
