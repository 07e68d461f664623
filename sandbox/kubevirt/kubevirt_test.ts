// KubeVirt's own virt-api and virt-controller in the sandbox, with the node stand-in (the
// kubelet and virt-handler), kube-scheduler, the real garbage collector and pvc-protection: the
// VM lifecycles the driver relies on (docs/upstream/kubevirt.md).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyOf } from '../../src/api/object-key.js';
import type { KubeClient } from '../../src/kube/client.js';
import { admissionDenial } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { createNamespace } from '../control-plane/access.js';
import { Annotations, ExtraResources, Finalizers, Labels } from '../standins/names.js';
import {
  FAST,
  driverVm,
  garbageCollectorKnowsVms,
  gone,
  useHarvester,
  waitUntil,
} from '../standins/testing.js';
import type { Pod, VirtualMachine, VirtualMachineInstance } from '../standins/types.js';

const running = (v: VirtualMachine | undefined) => v?.status?.printableStatus === 'Running';
const hasIp = (v: VirtualMachineInstance | undefined) => Boolean(v?.status?.interfaces?.[0]?.ipAddress);

/** PUT .../virtualmachines/<name>/<action> through the apiserver's aggregation layer to virt-api. */
async function vmAction(
  client: KubeClient,
  namespace: string,
  name: string,
  action: 'start' | 'stop' | 'restart',
) {
  await client.call({
    method: 'PUT',
    path: `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachines/${name}/${action}`,
    operation: `${action} VM ${namespace}/${name}`,
  });
}

/** Name, labels, annotations, owner and finalizers as KubeVirt's VM controller sets them. */
function assertMadeFromTemplate(instance: VirtualMachineInstance, owner: VirtualMachine): void {
  assert.deepEqual(instance.metadata.ownerReferences, [
    {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      name: owner.metadata.name,
      uid: owner.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  assert.ok(instance.metadata.finalizers?.includes(Finalizers.kubevirtVmController));
  const { [Labels.nodeName]: node, ...labels } = instance.metadata.labels ?? {};
  assert.deepEqual(labels, owner.spec.template.metadata?.labels);
  assert.equal(node, instance.status?.nodeName);
  assert.equal(instance.metadata.annotations?.['harvesterhci.io/sshNames'], '[]');
  assert.equal(instance.metadata.annotations?.[Annotations.vmGeneration], String(owner.metadata.generation));
  assert.deepEqual(
    instance.status?.phaseTransitionTimestamps?.map((p) => p.phase),
    ['Pending', 'Scheduling', 'Scheduled', 'Running'],
  );
}

/** IPv4 first, then IPv6, from the guest agent, on the template's NIC. */
function assertGuestAgentInterfaces(instance: VirtualMachineInstance): void {
  const [nic, ...others] = instance.status?.interfaces ?? [];
  assert.equal(others.length, 0);
  assert.ok(nic);
  assert.equal(nic.name, 'nic-0');
  assert.match(nic.mac ?? '', /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
  assert.match(nic.ipAddress ?? '', /^\d+\.\d+\.\d+\.\d+$/);
  assert.equal(nic.ipAddresses?.[0], nic.ipAddress);
  assert.match(nic.ipAddresses?.[1] ?? '', /^fd20:172:20::/);
  assert.match(nic.ipAddresses?.[2] ?? '', /^fe80::/);
  assert.equal(nic.interfaceName, 'eth0');
  assert.equal(nic.infoSource, 'domain, guest-agent');
}

/** One virt-launcher pod, on the VMI's node, using the VM's PVCs: pvc-protection sees them in use. */
async function assertLauncherPod(
  client: KubeClient,
  ns: string,
  instance: VirtualMachineInstance,
  claims: string[],
): Promise<void> {
  const pods = await client.list<Pod>(ExtraResources.pod, { namespace: ns });
  assert.equal(pods.items.length, 1);
  const pod = pods.items[0];
  assert.ok(pod);
  assert.equal(pod.spec.nodeName, instance.status?.nodeName);
  assert.deepEqual(
    pod.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid, o.controller, o.blockOwnerDeletion]),
    [['VirtualMachineInstance', instance.metadata.name, instance.metadata.uid, true, true]],
  );
  // virt-controller's launcher pod also has its emptyDir volumes (private, public, sockets, ...).
  assert.deepEqual(
    pod.spec.volumes?.flatMap((v) => v.persistentVolumeClaim?.claimName ?? []),
    claims,
  );
}

describe('KubeVirt in the sandbox', () => {
  const s = useHarvester({ name: 'kubevirt' });

  const vmi = (ns: string, name: string) =>
    s.client.find<VirtualMachineInstance>(Resources.virtualMachineInstance, { namespace: ns, name });
  const vm = (ns: string, name: string) =>
    s.client.get<VirtualMachine>(Resources.virtualMachine, { namespace: ns, name });
  const untilVm = (
    ns: string,
    name: string,
    what: string,
    until: (v: VirtualMachine | undefined) => boolean,
  ) => waitUntil<VirtualMachine>(s.client, Resources.virtualMachine, { namespace: ns, name }, what, until);
  const untilVmi = (
    ns: string,
    name: string,
    what: string,
    until: (v: VirtualMachineInstance | undefined) => boolean,
  ) =>
    waitUntil<VirtualMachineInstance>(
      s.client,
      Resources.virtualMachineInstance,
      { namespace: ns, name },
      what,
      until,
    );

  it('walks a VMI through Pending, Scheduling, Scheduled, Running with the configured delays', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'phases');
    const delays = { podStartMs: 400, scheduledMs: 400, guestAgentMs: 800 };
    standIns.configure({ delays });
    const seen: Array<{ phase: string; at: number; hasIp: boolean }> = [];
    // The kubelet stand-in's delay runs from the launcher pod's binding, which virt-controller's
    // Scheduling write may follow by a while under load: the first step is timed from the binding.
    let podBoundAt = NaN;
    const podWatch = client.watch<Pod>(ExtraResources.pod, { namespace: ns }, (e) => {
      if (Number.isNaN(podBoundAt) && e.object.spec.nodeName) podBoundAt = Date.now();
    });
    const watch = client.watch<VirtualMachineInstance>(
      Resources.virtualMachineInstance,
      { namespace: ns },
      (e) => {
        const phase = e.object.status?.phase ?? '';
        const last = seen[seen.length - 1];
        if (last?.phase !== phase || last.hasIp !== hasIp(e.object))
          seen.push({ phase, at: Date.now(), hasIp: hasIp(e.object) });
      },
    );
    try {
      await client.create(
        Resources.virtualMachine,
        driverVm(ns, 'vm', {
          disks: [{ name: 'vm-boot', storage: '1Gi', storageClassName: 'harvester-longhorn' }],
        }),
      );
      await untilVmi(ns, 'vm', 'an IP address', hasIp);
      // Our own watch may be a moment behind the wait's.
      for (let i = 0; i < 50 && !seen.some((p) => p.hasIp); i++) await new Promise((r) => setTimeout(r, 20));
    } finally {
      watch.stop();
      podWatch.stop();
      standIns.configure({ delays: FAST });
    }
    const phases = seen.map((p) => p.phase).filter((p, i, all) => p !== all[i - 1]);
    assert.deepEqual(
      phases.filter((p) => p !== ''),
      ['Pending', 'Scheduling', 'Scheduled', 'Running'],
    );
    const at = (phase: string, ip = false) =>
      seen.find((p) => p.phase === phase && p.hasIp === ip)?.at ?? NaN;
    const slack = 150; // events reach our watch with some jitter; without delays the gaps are ~10 ms
    const timeline = JSON.stringify({ podBoundAt, seen });
    assert.ok(at('Scheduled') - podBoundAt >= delays.podStartMs - slack, timeline);
    assert.ok(at('Running') - at('Scheduled') >= delays.scheduledMs - slack, timeline);
    assert.ok(at('Running', true) - at('Running') >= delays.guestAgentMs - slack, timeline);

    const instance = await vmi(ns, 'vm');
    const owner = await vm(ns, 'vm');
    assert.ok(instance);
    assertMadeFromTemplate(instance, owner);
    assertGuestAgentInterfaces(instance);
    assert.deepEqual(
      instance.status?.volumeStatus?.map((v) => [v.name, v.target]),
      [
        ['cloudinitdisk', 'vda'],
        ['disk-0', 'vdb'],
      ],
    );
    const status = (
      await untilVm(ns, 'vm', 'VM Running and ready', (v) => running(v) && v?.status?.ready === true)
    )?.status;
    assert.equal(status?.created, true);
    assert.equal(status?.runStrategy, 'RerunOnFailure');
    await assertLauncherPod(client, ns, instance, ['vm-boot']);
  });

  it('never reports an IP for a VM the noIp option names, only the domain interfaces', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'noip');
    standIns.configure({ noIp: (v) => v.namespace === ns && v.name === 'quiet' });
    await client.create(Resources.virtualMachine, driverVm(ns, 'quiet'));
    await client.create(Resources.virtualMachine, driverVm(ns, 'talkative'));
    await untilVmi(ns, 'talkative', 'an IP for the other VM', hasIp);
    await new Promise((r) => setTimeout(r, FAST.guestAgentMs * 3));
    const quiet = await vmi(ns, 'quiet');
    assert.equal(quiet?.status?.phase, 'Running');
    assert.deepEqual(
      quiet?.status?.interfaces?.map((i) => [i.name, i.infoSource, i.ipAddress]),
      [['nic-0', 'domain', undefined]],
    );
    assert.equal(
      quiet?.status?.conditions?.some((c) => c.type === 'AgentConnected'),
      false,
    );
  });

  it('stop deletes the VMI and the VM stays RerunOnFailure without one; start brings a VMI back', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'stop');
    await client.create(Resources.virtualMachine, driverVm(ns, 'vm'));
    const first = await untilVmi(ns, 'vm', 'VMI running', (v) => v?.status?.phase === 'Running');
    await vmAction(client, ns, 'vm', 'stop');
    const stopped = await untilVm(
      ns,
      'vm',
      'VM Stopped',
      (v) => v?.status?.printableStatus === 'Stopped' && !v.status.stateChangeRequests,
    );
    assert.equal(await vmi(ns, 'vm'), undefined);
    assert.equal(stopped?.spec.runStrategy, 'RerunOnFailure');
    // KubeVirt omits created and ready when false (omitempty).
    assert.notEqual(stopped?.status?.created, true);
    assert.notEqual(stopped?.status?.ready, true);
    await standIns.idle();
    assert.equal(await vmi(ns, 'vm'), undefined, 'a stopped RerunOnFailure VM is not restarted');

    await vmAction(client, ns, 'vm', 'start');
    const again = await untilVmi(ns, 'vm', 'VMI after start', (v) => v?.status?.phase === 'Running');
    assert.notEqual(again?.metadata.uid, first?.metadata.uid);
    await untilVm(ns, 'vm', 'start request consumed', (v) => running(v) && !v?.status?.stateChangeRequests);
  });

  it('restart gives a new VMI with a new UID and keeps the MAC address', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'restart');
    await client.create(Resources.virtualMachine, driverVm(ns, 'vm'));
    const first = await untilVmi(ns, 'vm', 'VMI with an IP', hasIp);
    const mac = first?.status?.interfaces?.[0]?.mac;
    await untilVm(
      ns,
      'vm',
      'MAC remembered',
      (v) => v?.metadata.annotations?.[Annotations.macAddress] === JSON.stringify({ 'nic-0': mac }),
    );
    await vmAction(client, ns, 'vm', 'restart');
    const second = await untilVmi(
      ns,
      'vm',
      'a new VMI running',
      (v) => v !== undefined && v.metadata.uid !== first?.metadata.uid && v.status?.phase === 'Running',
    );
    const after = await untilVm(
      ns,
      'vm',
      'requests consumed',
      (v) => running(v) && !v?.status?.stateChangeRequests,
    );
    // Harvester wrote the observed MAC into the VM spec when the first VMI went.
    assert.equal(after?.spec.template.spec.domain.devices?.interfaces?.[0]?.macAddress, mac);
    assert.equal(second?.status?.interfaces?.[0]?.mac, mac);
  });

  it('a launcher pod deleted under a running VM: the guest shuts down (Succeeded), RerunOnFailure leaves it stopped', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'podgone');
    await client.create(Resources.virtualMachine, driverVm(ns, 'vm'));
    await untilVmi(ns, 'vm', 'VMI running', (v) => v?.status?.phase === 'Running');
    const [pod] = (await client.list<Pod>(ExtraResources.pod, { namespace: ns })).items;
    assert.ok(pod, 'a launcher pod');
    await client.delete(ExtraResources.pod, keyOf(pod));
    const seen: string[] = [];
    const watch = client.watch<VirtualMachineInstance>(
      Resources.virtualMachineInstance,
      { namespace: ns },
      (e) => {
        const phase = e.object.status?.phase ?? '';
        if (seen[seen.length - 1] !== phase) seen.push(phase);
      },
    );
    try {
      await untilVmi(ns, 'vm', 'the finished VMI removed', gone);
      await untilVm(ns, 'vm', 'VM Stopped', (v) => v?.status?.printableStatus === 'Stopped');
      await standIns.idle();
    } finally {
      watch.stop();
    }
    assert.equal(seen[seen.length - 1], 'Succeeded', JSON.stringify(seen));
    assert.equal(await vmi(ns, 'vm'), undefined, 'a VMI that succeeded is not rerun');
  });

  it('RerunOnFailure restarts a VMI that failed (its launcher pod vanished, as with a lost node)', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'rerun');
    await client.create(Resources.virtualMachine, driverVm(ns, 'vm'));
    const first = await untilVmi(ns, 'vm', 'VMI running', (v) => v?.status?.phase === 'Running');
    const [pod] = (await client.list<Pod>(ExtraResources.pod, { namespace: ns })).items;
    assert.ok(pod, 'a launcher pod');
    await client.call({
      method: 'DELETE',
      path: `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`,
      body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
      operation: 'force-delete the launcher pod',
    });
    const second = await untilVmi(
      ns,
      'vm',
      'a new VMI running',
      (v) => v !== undefined && v.metadata.uid !== first?.metadata.uid && v.status?.phase === 'Running',
    );
    assert.ok(second);
    await untilVm(ns, 'vm', 'start request consumed', (v) => running(v) && !v?.status?.stateChangeRequests);
  });

  it('refuses a user deleting a PVC a VM names (Harvester); one the garbage collector deletes stays Terminating until the VM stops (launcher pod + pvc-protection)', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'in-use');
    await client.create(
      Resources.virtualMachine,
      driverVm(ns, 'vm', {
        disks: [{ name: 'vm-data', storage: '1Gi', storageClassName: 'harvester-longhorn' }],
      }),
    );
    await untilVmi(ns, 'vm', 'VMI running', (v) => v?.status?.phase === 'Running');
    // A user's delete: Harvester's PVC webhook refuses it while the VM names the claim.
    await assert.rejects(client.delete(Resources.pvc, { namespace: ns, name: 'vm-data' }), (err: unknown) => {
      assert.match(String(admissionDenial(err)?.message), /currently attached to VM: in-use-\w+\/vm$/);
      return true;
    });
    // The garbage collector's passes (its owner gone), and then pvc-protection holds the claim.
    const owner = await client.create<KubeObject>(Resources.configMap, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'owner', namespace: ns },
    });
    await client.patch(
      Resources.pvc,
      { namespace: ns, name: 'vm-data' },
      {
        metadata: {
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid }],
        },
      },
    );
    await client.delete(Resources.configMap, { namespace: ns, name: 'owner' });
    const held = await waitUntil<KubeObject>(
      client,
      Resources.pvc,
      { namespace: ns, name: 'vm-data' },
      'the garbage collector deleting the PVC, held by pvc-protection alone',
      (p) =>
        Boolean(p?.metadata.deletionTimestamp) && p?.metadata.finalizers?.join() === Finalizers.pvcProtection,
      30_000,
    );
    assert.deepEqual(held?.metadata.finalizers, [Finalizers.pvcProtection]);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.ok(
      await client.find(Resources.pvc, { namespace: ns, name: 'vm-data' }),
      'held while the pod runs',
    );
    await vmAction(client, ns, 'vm', 'stop');
    await waitUntil(
      client,
      Resources.pvc,
      { namespace: ns, name: 'vm-data' },
      'PVC released once the pod is gone',
      gone,
      30_000,
    );
  });

  it('Foreground deletion of a VM ends with the VM, its VMI, pod and cloud-init Secret gone', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'foreground');
    const created = await client.create<VirtualMachine>(
      Resources.virtualMachine,
      driverVm(ns, 'vm', {
        disks: [{ name: 'vm-boot', storage: '1Gi', storageClassName: 'harvester-longhorn' }],
      }),
    );
    await client.create<KubeObject & { stringData: Record<string, string> }>(Resources.secret, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'vm-cloudinit',
        namespace: ns,
        ownerReferences: [
          {
            apiVersion: 'kubevirt.io/v1',
            kind: 'VirtualMachine',
            name: 'vm',
            uid: created.metadata.uid ?? '',
          },
        ],
      },
      stringData: { userdata: '#cloud-config\n' },
    });
    await untilVm(ns, 'vm', 'VM running', running);
    await garbageCollectorKnowsVms(client);
    await client.delete(
      Resources.virtualMachine,
      { namespace: ns, name: 'vm' },
      { propagationPolicy: 'Foreground' },
    );
    await untilVm(ns, 'vm', 'VM gone', gone);
    assert.equal(await vmi(ns, 'vm'), undefined);
    await waitUntil(
      client,
      Resources.secret,
      { namespace: ns, name: 'vm-cloudinit' },
      'cloud-init Secret gone',
      gone,
    );
    assert.equal((await client.list(ExtraResources.pod, { namespace: ns })).items.length, 0);
    // Not named in removedPersistentVolumeClaims: the boot PVC stays.
    const pvc = await client.find<KubeObject>(Resources.pvc, { namespace: ns, name: 'vm-boot' });
    assert.equal(pvc?.metadata.deletionTimestamp, undefined);
  });

  it("answers start on a running VM with virt-api's 409, and hot-plugs through addvolume and removevolume", async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'subresources');
    await client.create(Resources.virtualMachine, driverVm(ns, 'vm'));
    await untilVmi(ns, 'vm', 'VMI running', (v) => v?.status?.phase === 'Running');
    const again = await vmAction(client, ns, 'vm', 'start').then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.match(String(again), /409/);
    assert.match(String(again), /VM is already running/);

    const claim = await s.standIns.csi.createVolume({ namespace: ns, size: '1Gi' });
    const path = `/apis/subresources.kubevirt.io/v1/namespaces/${ns}/virtualmachines/vm`;
    await client.call({
      method: 'PUT',
      path: `${path}/addvolume`,
      body: {
        name: claim,
        disk: { name: claim, disk: { bus: 'scsi' } },
        volumeSource: { persistentVolumeClaim: { claimName: claim, hotpluggable: true } },
      },
      operation: 'addvolume',
    });
    const plugged = await untilVmi(
      ns,
      'vm',
      'the volume Ready',
      (v) => v?.status?.volumeStatus?.some((vs) => vs.name === claim && vs.phase === 'Ready') ?? false,
    );
    assert.equal(plugged?.status?.volumeStatus?.find((vs) => vs.name === claim)?.target, 'sda');
    await client.call({
      method: 'PUT',
      path: `${path}/removevolume`,
      body: { name: claim },
      operation: 'removevolume',
    });
    await untilVmi(
      ns,
      'vm',
      'the volume gone',
      (v) => v !== undefined && !v.status?.volumeStatus?.some((vs) => vs.name === claim),
    );
  });

  describe('other run strategies', () => {
    it('Always: starts on creation; runStrategy Halted deletes the VMI', async () => {
      const { client } = s;
      const ns = await createNamespace(client, 'always');
      await client.create(Resources.virtualMachine, driverVm(ns, 'vm', { runStrategy: 'Always' }));
      await untilVm(ns, 'vm', 'running', running);
      await client.patch(
        Resources.virtualMachine,
        { namespace: ns, name: 'vm' },
        { spec: { runStrategy: 'Halted' } },
      );
      // Stopped already shows while the final VMI is on its way out.
      await untilVm(ns, 'vm', 'stopped', (v) => v?.status?.printableStatus === 'Stopped');
      await untilVmi(ns, 'vm', 'VMI gone', gone);
      await untilVm(ns, 'vm', 'no VMI recorded', (v) => v?.status?.created !== true);
    });

    it("Halted: no VMI; a start request starts it, with the run strategy Harvester's mutator restores", async () => {
      const { client, standIns } = s;
      const ns = await createNamespace(client, 'halted');
      await client.create(Resources.virtualMachine, driverVm(ns, 'vm', { runStrategy: 'Halted' }));
      await untilVm(ns, 'vm', 'Stopped', (v) => v?.status?.printableStatus === 'Stopped');
      await standIns.idle();
      assert.equal(await vmi(ns, 'vm'), undefined);
      await vmAction(client, ns, 'vm', 'start');
      const started = await untilVm(ns, 'vm', 'running', running);
      // virt-api's start asks for Always; Harvester's VM mutator, seeing Halted left, writes the
      // strategy kept in harvesterhci.io/vmRunStrategy instead (RerunOnFailure when none).
      assert.equal(started?.spec.runStrategy, 'RerunOnFailure');
    });

    it('Manual: starts and stops on requests only', async () => {
      const { client, standIns } = s;
      const ns = await createNamespace(client, 'manual');
      await client.create(Resources.virtualMachine, driverVm(ns, 'vm', { runStrategy: 'Manual' }));
      await untilVm(ns, 'vm', 'Stopped', (v) => v?.status?.printableStatus === 'Stopped');
      await standIns.idle();
      assert.equal(await vmi(ns, 'vm'), undefined);
      await vmAction(client, ns, 'vm', 'start');
      await untilVmi(ns, 'vm', 'VMI running', (v) => v?.status?.phase === 'Running');
      await vmAction(client, ns, 'vm', 'stop');
      await untilVmi(ns, 'vm', 'VMI gone', gone);
      const stopped = await untilVm(ns, 'vm', 'Stopped', (v) => v?.status?.printableStatus === 'Stopped');
      assert.equal(stopped?.spec.runStrategy, 'Manual');
    });

    it('Once: starts on creation', async () => {
      const { client } = s;
      const ns = await createNamespace(client, 'once');
      await client.create(Resources.virtualMachine, driverVm(ns, 'vm', { runStrategy: 'Once' }));
      await untilVm(ns, 'vm', 'running', running);
    });
  });
});
