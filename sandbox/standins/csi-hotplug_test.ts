// The CSI driver's host-side calls, the guest side in each guest's own apiserver, and
// KubeVirt's declarative hot-plug (docs/upstream/harvester-kubevirt.md#guest-cluster-volumes).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources } from '../../src/kube/resources.js';
import { createNamespace } from '../control-plane/access.js';
import { csiStandIn, hostVolumeSize } from './csi/csi.js';
import { ExtraResources } from './names.js';
import { HARVESTER_CSI_DRIVER } from '../../src/harvester/guest-volumes.js';
import type { PersistentVolume } from '../../src/api/core.js';
import { residentMiB, startGuestApiserver } from '../control-plane/guest-apiserver.js';
import { driverVm, gone, useHarvester, waitUntil } from './testing.js';
import type { PersistentVolumeClaim, Pod, VirtualMachine, VirtualMachineInstance } from './types.js';

/** The volume in the VMI spec (SCSI disk) and in volumeStatus as Ready, served by an attachment pod. */
async function assertHotplugged(
  client: KubeClient,
  ns: string,
  vmi: VirtualMachineInstance,
  volume: string,
): Promise<Pod> {
  assert.ok(
    vmi.spec.volumes?.some((v) => v.name === volume && v.persistentVolumeClaim?.hotpluggable === true),
  );
  assert.ok(vmi.spec.domain.devices?.disks?.some((d) => d.name === volume && d.disk?.bus === 'scsi'));
  const status = vmi.status?.volumeStatus?.find((vs) => vs.name === volume);
  assert.ok(status?.hotplugVolume);
  assert.match(status.hotplugVolume.attachPodName ?? '', /^hp-volume-/);
  assert.ok(status.hotplugVolume.attachPodUID);
  assert.equal(status.target, 'sda');
  assert.equal(status.message, `Successfully attach hotplugged volume ${volume} to VM`);
  const pod = await client.get<Pod>(ExtraResources.pod, {
    namespace: ns,
    name: status.hotplugVolume.attachPodName ?? '',
  });
  // Beside its emptyDir and the service account token the apiserver mounts (virt-controller counts both).
  assert.deepEqual(
    pod.spec.volumes?.flatMap((v) => v.persistentVolumeClaim?.claimName ?? []),
    [volume],
  );
  return pod;
}

describe('host volume sizes', () => {
  it('rounds up to 2 MiB with a 10 MiB minimum, as the CSI driver does', () => {
    const MiB = 1024n * 1024n;
    assert.equal(hostVolumeSize(1), 10n * MiB);
    assert.equal(hostVolumeSize('11Mi'), 12n * MiB);
    assert.equal(hostVolumeSize('1Gi'), 1024n * MiB);
    assert.equal(hostVolumeSize(1_000_000_000), 954n * MiB);
  });
});

describe('CSI stand-in and hot-plug', () => {
  const s = useHarvester({ name: 'standins-csi' });

  it('creates host volumes pvc-<uuid> as the released driver does: RWX, Block, rounded size, no label', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'csi-create');
    const name = await standIns.csi.createVolume({ namespace: ns, size: 1_000_000_000 });
    assert.match(name, /^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const a = await waitUntil<PersistentVolumeClaim>(
      client,
      Resources.pvc,
      { namespace: ns, name },
      'bound',
      (p) => p?.status?.phase === 'Bound',
    );
    assert.equal(a?.metadata.labels, undefined, 'harvester-csi-driver 97b6c358 labels nothing');
    assert.deepEqual(a?.spec.accessModes, ['ReadWriteMany']);
    assert.equal(a?.spec.volumeMode, 'Block');
    assert.equal(a?.spec.resources?.requests?.storage, '954Mi');
    assert.equal(a?.spec.storageClassName, 'harvester-longhorn', 'the default class, set by the apiserver');
  });

  it("puts each guest's claim and PersistentVolume in that guest's own apiserver, naming the host volume", async (t) => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'csi-guests');
    const [one, two] = await Promise.all(
      ['fleet-default/g-one', 'fleet-default/g-two'].map((name) =>
        startGuestApiserver({ name, etcdUrl: s.cp.etcdUrl }),
      ),
    );
    assert.ok(one && two);
    try {
      const v1 = await standIns.csi.provision({
        namespace: ns,
        size: '1Gi',
        guest: one.admin,
        claim: { namespace: 'default', name: 'data-web-0' },
      });
      const v2 = await standIns.csi.provision({ namespace: ns, size: '2Gi', guest: two.admin });
      const pvsOf = async (g: typeof one) =>
        (await g.admin.list<PersistentVolume>(Resources.persistentVolume)).items;
      const [pv1] = await pvsOf(one);
      assert.equal((await pvsOf(one)).length, 1, 'the first guest sees its own PV only');
      assert.deepEqual(
        (await pvsOf(two)).map((p) => p.spec.csi?.volumeHandle),
        [v2.hostPvc],
        'the second its own',
      );
      const claimUid = (
        await one.admin.get<PersistentVolumeClaim>(Resources.pvc, {
          namespace: 'default',
          name: 'data-web-0',
        })
      ).metadata.uid;
      assert.equal(v1.hostPvc, `pvc-${claimUid}`, 'the host volume is named after the guest claim');
      assert.equal(pv1?.metadata.name, v1.hostPvc);
      assert.deepEqual(pv1?.spec.csi, {
        driver: HARVESTER_CSI_DRIVER,
        volumeHandle: v1.hostPvc,
        fsType: 'ext4',
      });
      assert.deepEqual(
        pv1?.spec.claimRef && { ns: pv1.spec.claimRef.namespace, name: pv1.spec.claimRef.name },
        {
          ns: 'default',
          name: 'data-web-0',
        },
      );
      const bound = await one.admin.get<PersistentVolumeClaim>(Resources.pvc, {
        namespace: 'default',
        name: 'data-web-0',
      });
      assert.equal(bound.status?.phase, 'Bound');
      assert.equal(bound.spec.volumeName, v1.hostPvc);
      assert.equal(
        (await client.list<PersistentVolume>(Resources.persistentVolume)).items.filter(
          (p) => p.spec.csi?.driver === HARVESTER_CSI_DRIVER,
        ).length,
        0,
        "no guest PV in Harvester's apiserver (Longhorn's own PVs are there, of its driver)",
      );
      const host = await client.get<PersistentVolumeClaim>(Resources.pvc, {
        namespace: ns,
        name: v1.hostPvc,
      });
      assert.equal(host.metadata.labels, undefined);
      // What a guest apiserver costs (docs/limits.md, guest volumes).
      t.diagnostic(
        `guest apiservers: ready in ${Math.round(one.startMs)} ms and ${Math.round(two.startMs)} ms; resident ${residentMiB(one.pid) ?? '?'} MiB and ${residentMiB(two.pid) ?? '?'} MiB`,
      );
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  it('hot-plug adds the volume to the VM spec and a volumeStatus with hotplugVolume to the VMI; unplug removes both', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'hotplug');
    await client.create(Resources.virtualMachine, driverVm(ns, 'guest-node'));
    await waitUntil<VirtualMachineInstance>(
      client,
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'guest-node' },
      'running',
      (v) => v?.status?.phase === 'Running',
    );
    const volume = await standIns.csi.createVolume({ namespace: ns, size: '1Gi' });
    await waitUntil<PersistentVolumeClaim>(
      client,
      Resources.pvc,
      { namespace: ns, name: volume },
      'bound',
      (p) => p?.status?.phase === 'Bound',
    );
    await standIns.csi.hotplug({ namespace: ns, vmName: 'guest-node', pvcName: volume });

    const vm = await client.get<VirtualMachine>(Resources.virtualMachine, {
      namespace: ns,
      name: 'guest-node',
    });
    assert.deepEqual(vm.spec.template.spec.volumes?.at(-1), {
      name: volume,
      persistentVolumeClaim: { claimName: volume, hotpluggable: true },
    });
    assert.deepEqual(vm.spec.template.spec.domain.devices?.disks?.at(-1), {
      name: volume,
      disk: { bus: 'scsi' },
    });

    const attached = await waitUntil<VirtualMachineInstance>(
      client,
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'guest-node' },
      'volume Ready',
      (v) => v?.status?.volumeStatus?.some((vs) => vs.name === volume && vs.phase === 'Ready') ?? false,
    );
    assert.ok(attached);
    const attachPod = await assertHotplugged(client, ns, attached, volume);

    // Idempotent, as ControllerPublishVolume retries are.
    await standIns.csi.hotplug({ namespace: ns, vmName: 'guest-node', pvcName: volume });
    const unchanged = await client.get<VirtualMachine>(Resources.virtualMachine, {
      namespace: ns,
      name: 'guest-node',
    });
    assert.equal(unchanged.spec.template.spec.volumes?.filter((v) => v.name === volume).length, 1);

    await standIns.csi.unplug({ namespace: ns, vmName: 'guest-node', pvcName: volume });
    const after = await client.get<VirtualMachine>(Resources.virtualMachine, {
      namespace: ns,
      name: 'guest-node',
    });
    assert.equal(
      after.spec.template.spec.volumes?.some((v) => v.name === volume),
      false,
    );
    assert.equal(
      after.spec.template.spec.domain.devices?.disks?.some((d) => d.name === volume),
      false,
    );
    const detached = await waitUntil<VirtualMachineInstance>(
      client,
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'guest-node' },
      'volume gone from the VMI',
      (v) =>
        v !== undefined &&
        !v.status?.volumeStatus?.some((vs) => vs.name === volume) &&
        !v.spec.volumes?.some((x) => x.name === volume),
    );
    assert.ok(detached);
    await waitUntil(
      client,
      ExtraResources.pod,
      { namespace: ns, name: attachPod.metadata.name },
      'attachment pod gone',
      gone,
    );
    // Unplugged, the volume is free again: it can be deleted at once.
    await client.delete(Resources.pvc, { namespace: ns, name: volume });
    await waitUntil(client, Resources.pvc, { namespace: ns, name: volume }, 'unplugged PVC deletable', gone);
  });

  it('hot-plug wins its race with other writers of the VM, backing off as the attacher does', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'hotplug-race');
    await client.create(Resources.virtualMachine, driverVm(ns, 'raced'));
    const ref = { namespace: ns, name: 'raced' };
    // Another writer changes the VM right after each of the first 8 reads, so the
    // resourceVersion each patch is pinned to is stale 8 times in a row.
    let reads = 0;
    const racing = new Proxy(client, {
      get(target, prop, receiver) {
        if (prop !== 'get') return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: Parameters<KubeClient['get']>) => {
          const read = await target.get(...args);
          if (++reads <= 8) {
            await target.patch(Resources.virtualMachine, ref, {
              metadata: { annotations: { 'test/other-writer': String(reads) } },
            });
          }
          return read;
        };
      },
    });
    await csiStandIn(racing).hotplug({ namespace: ns, vmName: 'raced', pvcName: 'pvc-raced' });
    const vm = await client.get<VirtualMachine>(Resources.virtualMachine, ref);
    assert.equal(reads, 9, 'one read per attempt: 8 lost races, then the patch');
    assert.ok(vm.spec.template.spec.volumes?.some((v) => v.name === 'pvc-raced'));
    assert.equal(vm.metadata.annotations?.['test/other-writer'], '8');
  });
});
