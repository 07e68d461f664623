// Guest clusters' host volumes on the whole sandbox: each guest cluster its
// own kube-apiserver started by Rancher's stand-in (its `<cluster>-kubeconfig` written as Rancher
// writes it), the CSI stand-in making host volumes with no label (as the released driver) and
// each guest's claim and PV in that guest, the real Cluster API manager with Rancher's stand-in
// running the real driver's Remove in process, and the controller under the chart's RBAC. What
// is checked is what an operator sees: the labels on Harvester's PVCs, which are left after a
// whole-cluster deletion, the Events on the clusters, the metrics, the status and `leftovers`.
// A guest's PV is a claim: a volume of another cluster, a Harvester user's
// standalone one or one bound statically in another cluster, named by a guest, is never deleted
// by the controller nor by the driver's whole-cluster removal, and is shown as kept with why.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/api/core.js';
import { HARVESTER_CSI_DRIVER } from '../../src/harvester/guest-volumes.js';
import { LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { createGuestCluster, createMachineVm } from '../../sandbox/rancher/guest-cluster.js';
import { GuestKubeconfigs } from '../../sandbox/rancher/guest-kubeconfigs.js';
import type { Sandbox } from '../../sandbox/sandbox.js';
import { eventuallyValue } from '../support/eventually.js';
import { livePvcs } from '../support/volumes.js';
import { useSandboxWorld } from './gate-fixture.js';
import { CliRunner, kubeconfigFile, tempDir } from '../cli-harness.js';

const NS = 'fleet-gv';
const VM_NS = 'default';

const world = useSandboxWorld({ namespace: NS, systemNamespace: 'hm-gv', guestApiservers: true });
const sbx = (): Sandbox => world.sandbox;

/** A guest cluster as Rancher makes it, on its own apiserver, with one VM on Harvester. */
async function guest(name: string, guests: GuestKubeconfigs): Promise<{ api: KubeClient; vms: string[] }> {
  const s = sbx();
  const machines = await createGuestCluster(s.rancher.admin, {
    namespace: NS,
    name,
    clusterCredential: `${s.cloudCredential.namespace}:${s.cloudCredential.name}`,
    pools: [{ name: 'wk', quantity: 1 }],
    vmNamespace: VM_NS,
  });
  const vms: string[] = [];
  for (const m of machines)
    vms.push(
      (
        await createMachineVm(s.harvester.admin, {
          instanceName: m.instanceName,
          clusterName: name,
          vmNamespace: VM_NS,
        })
      ).metadata.name,
    );
  const api = (await eventuallyValue(
    `guest cluster ${name}'s kubeconfig`,
    () => guests.client(NS, name).catch(() => undefined),
    (c): c is KubeClient => c !== undefined,
    60_000,
  )) as KubeClient;
  return { api, vms };
}

/** A guest admin's PersistentVolume naming a host volume (a static bind, or a forged one). */
const staticPv = (name: string, handle: string): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: {
    csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: handle },
    capacity: { storage: '1Gi' },
    accessModes: ['ReadWriteOnce'],
  },
});

const annotations = async (name: string): Promise<Record<string, string>> =>
  (await sbx().harvester.admin.get<KubeObject>(Resources.pvc, { namespace: VM_NS, name })).metadata
    .annotations ?? {};

const labels = async (): Promise<Map<string, string | undefined>> =>
  new Map(
    (await sbx().harvester.admin.list<KubeObject>(Resources.pvc, { namespace: VM_NS })).items.map((p) => [
      p.metadata.name,
      p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME],
    ]),
  );

async function clusterEvents(name: string, reason: string): Promise<string[]> {
  const list = await sbx().rancher.admin.list<
    KubeObject & { message?: string; involvedObject?: { name?: string } }
  >(Resources.event, { namespace: NS, fieldSelector: `reason=${reason}` });
  return list.items.filter((e) => e.involvedObject?.name === name).map((e) => e.message ?? '');
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${world.controller.controller.port}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(name))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

describe("guest clusters' host volumes (controller + guest apiservers on the sandbox)", () => {
  it("labels each guest's volumes from its own PVs, never another cluster's; a deletion takes its unattached volumes and keeps what another cluster or a VM still uses", async () => {
    const s = sbx();
    const { csi } = s.standIns;
    const guests = new GuestKubeconfigs(s.rancher.admin);
    try {
      const { api: apiA, vms: vmsA } = await guest('gv-a', guests);
      const { api: apiB } = await guest('gv-b', guests);
      // A VM of no guest cluster in Rancher (a workload VM made on Harvester by hand).
      const keeper = await createMachineVm(s.harvester.admin, {
        instanceName: 'keeper-vm',
        clusterName: 'not-in-rancher',
        vmNamespace: VM_NS,
      });

      // gv-a: one volume attached to nothing (a stopped StatefulSet's), one a VM outside the
      // cluster uses; gv-b: one attached to nothing. The CSI stand-in labels none
      // (sandbox/standins/csi-hotplug_test.ts): the controller does, within moments.
      const a1 = await csi.provision({ namespace: VM_NS, size: '1Gi', guest: apiA });
      const a2 = await csi.provision({ namespace: VM_NS, size: '1Gi', guest: apiA });
      await csi.hotplug({ namespace: VM_NS, vmName: keeper.metadata.name, pvcName: a2.hostPvc });
      const b1 = await csi.provision({ namespace: VM_NS, size: '1Gi', guest: apiB });
      // gv-a's volume a3, hot-plugged into gv-a's VM, that gv-b's admin also binds statically
      // (a volume moved to a new cluster); gv-b's b2, which gv-a's admin names with a PV named
      // as the volume (passing for a provisioned one); a Harvester user's standalone volume that
      // gv-a's admin binds statically. None of them is gv-a's alone.
      const a3 = await csi.provision({ namespace: VM_NS, size: '1Gi', guest: apiA });
      await csi.hotplug({ namespace: VM_NS, vmName: vmsA[0] ?? '', pvcName: a3.hostPvc });
      await apiB.create<PersistentVolume>(Resources.persistentVolume, staticPv('moved-from-a', a3.hostPvc));
      const b2 = await csi.provision({ namespace: VM_NS, size: '1Gi', guest: apiB });
      await apiA.create<PersistentVolume>(Resources.persistentVolume, staticPv(b2.hostPvc, b2.hostPvc));
      await s.harvester.admin.create<PersistentVolumeClaim>(Resources.pvc, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'user-data', namespace: VM_NS },
        spec: {
          accessModes: ['ReadWriteMany'],
          volumeMode: 'Block',
          resources: { requests: { storage: '1Gi' } },
        },
      });
      await apiA.create<PersistentVolume>(
        Resources.persistentVolume,
        staticPv('restored-user-data', 'user-data'),
      );

      const recorded = await eventuallyValue(
        (now) => `labels on Harvester: ${JSON.stringify([...now])}`,
        labels,
        (now) =>
          now.get(a1.hostPvc) === 'gv-a' && now.get(a2.hostPvc) === 'gv-a' && now.get(b1.hostPvc) === 'gv-b',
        60_000,
      );
      assert.equal(recorded.size >= 3, true);
      assert.match(
        (await annotations(a1.hostPvc))['harvester-machine.io/ownership-evidence'] ?? '',
        /^corroborated: .*after guest cluster gv-a/,
      );
      // Both clusters named a3 and b2, whichever recorded first: listed on the PVC, contested,
      // no cluster's label; the standalone volume is claimed by gv-a, not corroborated.
      for (const v of [a3.hostPvc, b2.hostPvc])
        await eventuallyValue(
          (now) => `${v}'s claimants and evidence: ${JSON.stringify(now)}`,
          () => annotations(v),
          (now) =>
            now['harvester-machine.io/guest-claimants'] === 'gv-a,gv-b' &&
            (now['harvester-machine.io/ownership-evidence'] ?? '').startsWith('contested: '),
          60_000,
        );
      const standalone = await eventuallyValue(
        (now) => `user-data's evidence: ${JSON.stringify(now)}`,
        () => annotations('user-data'),
        (now) => (now['harvester-machine.io/ownership-evidence'] ?? '').startsWith('not corroborated: '),
        60_000,
      );
      assert.match(
        standalone['harvester-machine.io/ownership-evidence'] ?? '',
        /PersistentVolume restored-user-data names it, but its name is not one the Harvester CSI driver gives/,
      );
      const afterClaims = await labels();
      for (const v of [a3.hostPvc, b2.hostPvc, 'user-data'])
        assert.equal(afterClaims.get(v), undefined, `${v} is labelled for no cluster`);
      const notCorroborated = await eventuallyValue(
        'the GuestVolumeNotCorroborated Event on gv-a',
        () => clusterEvents('gv-a', 'GuestVolumeNotCorroborated'),
        (e) => e.length > 0,
      );
      assert.match(
        notCorroborated.join('\n'),
        /host volume default\/user-data, named by guest PersistentVolume restored-user-data/,
      );
      const seen = await eventuallyValue(
        'the GuestVolumesRecorded Event on gv-a',
        () => clusterEvents('gv-a', 'GuestVolumesRecorded'),
        (e) => e.length > 0,
      );
      assert.match(
        seen.join('\n'),
        new RegExp(`${VM_NS}/${a1.hostPvc} \\(guest PersistentVolume ${a1.hostPvc}`),
      );

      // gv-a's admin makes a PV naming gv-b's recorded volume: contested from then on, the label
      // the controller wrote for gv-b taken back (no removal of either cluster takes it), a
      // Warning on gv-a.
      await apiA.create<PersistentVolume>(Resources.persistentVolume, staticPv('copied-from-b', b1.hostPvc));
      const conflict = await eventuallyValue(
        `the GuestVolumeOwnedByOtherCluster Event on gv-a for ${b1.hostPvc}`,
        () => clusterEvents('gv-a', 'GuestVolumeOwnedByOtherCluster'),
        (e) => e.some((m) => m.includes(b1.hostPvc)),
      );
      assert.match(
        conflict.find((m) => m.includes(b1.hostPvc)) ?? '',
        new RegExp(
          `${b1.hostPvc}, named by guest PersistentVolume copied-from-b of guest cluster fleet-gv/gv-a: ownership contested \\(named by guest clusters gv-a, gv-b\\)`,
        ),
      );
      await eventuallyValue(
        `${b1.hostPvc}'s label taken back`,
        async () => (await labels()).get(b1.hostPvc),
        (l) => l === undefined,
      );
      assert.ok((await metric('harvester_machine_guest_volume_conflicts_total')) >= 3);
      assert.equal(await metric('harvester_machine_guest_watches{state="watching"}'), 2);

      await s.rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name: 'gv-a' });
      await waitFor(s.rancher.admin, {
        type: Resources.provisioningCluster,
        namespace: NS,
        name: 'gv-a',
        timeoutMs: 120_000,
        description: 'cluster gv-a to be deleted',
        until: (o) => o === undefined,
      });
      const left = await eventuallyValue(
        (now) => `gv-a's unattached volume ${a1.hostPvc} still there: ${[...now].join(', ')}`,
        () => livePvcs(s.harvester.admin, VM_NS),
        (now) => !now.has(a1.hostPvc),
        60_000,
      );
      assert.ok(left.has(a2.hostPvc), `${a2.hostPvc}, used by keeper-vm, stays`);
      assert.ok(left.has(b1.hostPvc), `gv-b's ${b1.hostPvc} stays (also named by gv-a's copied PV)`);
      assert.ok(
        left.has(b2.hostPvc),
        `gv-b's ${b2.hostPvc} stays (gv-a's PV named as it passes for nothing)`,
      );
      assert.ok(left.has('user-data'), "the Harvester user's standalone volume stays");
      // The VM's own boot disk went with the driver's whole-cluster removal; the contested
      // volume hot-plugged into it stayed.
      await eventuallyValue(
        `gv-a's VM ${vmsA[0] ?? ''} removed`,
        async () =>
          (await s.harvester.admin.find(Resources.virtualMachine, {
            namespace: VM_NS,
            name: vmsA[0] ?? '',
          })) === undefined,
        (gone) => gone,
        120_000,
      );
      assert.ok(
        (await livePvcs(s.harvester.admin, VM_NS)).has(a3.hostPvc),
        `${a3.hostPvc}, which gv-b also named, stays`,
      );

      const inventory = await clusterEvents('gv-a', 'GuestVolumesInventoried');
      assert.match(
        inventory.join('\n'),
        /last inventory of guest cluster fleet-gv\/gv-a as its deletion starts, from the guest cluster's apiserver/,
      );
      assert.match(inventory.join('\n'), new RegExp(`${VM_NS}/${a1.hostPvc}`));
      // The status ConfigMap names the volumes that go with the deleted cluster, and why.
      const summary = await eventuallyValue(
        "the last inventory in the controller's status",
        async () =>
          (
            await s.rancher.admin.find<KubeObject & { data?: Record<string, string> }>(Resources.configMap, {
              namespace: 'hm-gv',
              name: 'harvester-machine-controller-status',
            })
          )?.data?.['summary.txt'] ?? '',
        (t) => t.includes('fleet-gv/gv-a at '),
      );
      assert.match(
        summary,
        new RegExp(
          `${VM_NS}/${a1.hostPvc}: guest PersistentVolume ${a1.hostPvc} \\(claim [^)]+\\); recorded before; goes with the cluster`,
        ),
      );
      // The VMs' removals or the volume cleanup took it; the cleanup says which, and what it kept.
      const closing = await eventuallyValue(
        'the volume cleanup Event on gv-a',
        async () => [
          ...(await clusterEvents('gv-a', 'HarvesterVolumesDeleted')),
          ...(await clusterEvents('gv-a', 'HarvesterVolumesNoneLeft')),
        ],
        (e) => e.length > 0,
        60_000,
      );
      assert.match(closing.join('\n'), new RegExp(`kept: ${VM_NS}/${a2.hostPvc} \\(still used by`));
      assert.ok((await metric('harvester_machine_guest_requests_total')) > 0);
      assert.match(
        summary,
        new RegExp(
          `${VM_NS}/user-data: guest PersistentVolume restored-user-data; kept, ownership not corroborated: .*; stays`,
        ),
      );
      assert.match(
        summary,
        new RegExp(
          `${VM_NS}/${b1.hostPvc}: guest PersistentVolume copied-from-b; kept, ownership contested: named by guest clusters gv-a, gv-b; .*; stays`,
        ),
      );

      // leftovers lists what stayed for want of certain ownership as kept, with why, and --delete
      // would not take it.
      const cli = new CliRunner(tempDir('hm-gv-store-'));
      const admin = kubeconfigFile(tempDir('hm-gv-kc-'), 'admin', s.harvester.adminKubeconfig);
      const report = (
        await cli.expect(0, ['leftovers', '--kubeconfig', admin, '--min-age', '0', '-o', 'json'])
      ).json<{
        volumes: {
          groups: Array<{ volumes: Array<{ name: string }> }>;
          skipped: { claimed: Array<{ name: string; reason: string }> };
        };
      }>();
      const claimed = new Map(report.volumes.skipped.claimed.map((c) => [c.name, c.reason]));
      for (const v of [b1.hostPvc, b2.hostPvc, a3.hostPvc])
        assert.match(
          claimed.get(v) ?? '',
          /named by guest clusters gv-a, gv-b: ownership contested; never deleted automatically/,
          v,
        );
      assert.match(claimed.get('user-data') ?? '', /^ownership not corroborated: /);
      const listed = report.volumes.groups.flatMap((g) => g.volumes.map((v) => v.name));
      for (const v of [b1.hostPvc, b2.hostPvc, a3.hostPvc, 'user-data']) assert.ok(!listed.includes(v), v);
    } finally {
      guests.close();
    }
  });
});
