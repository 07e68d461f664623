// Guest clusters' host volumes (docs/decisions/0015) on the whole sandbox: each guest cluster its
// own kube-apiserver started by Rancher's stand-in (its `<cluster>-kubeconfig` written as Rancher
// writes it), the CSI stand-in making host volumes with no label (as the released driver) and
// each guest's claim and PV in that guest, the real Cluster API manager with Rancher's stand-in
// running the real driver's Remove in process, and the controller under the chart's RBAC. What
// is checked is what an operator sees: the labels on Harvester's PVCs, which are left after a
// whole-cluster deletion, the Events on the clusters and the metrics.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume } from '../../src/api/core.js';
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

const NS = 'fleet-gv';
const VM_NS = 'default';

const world = useSandboxWorld({ namespace: NS, systemNamespace: 'hm-gv', guestApiservers: true });
const sbx = (): Sandbox => world.sandbox;

/** A guest cluster as Rancher makes it, on its own apiserver, with one VM on Harvester. */
async function guest(name: string, guests: GuestKubeconfigs): Promise<KubeClient> {
  const s = sbx();
  const machines = await createGuestCluster(s.rancher.admin, {
    namespace: NS,
    name,
    clusterCredential: `${s.cloudCredential.namespace}:${s.cloudCredential.name}`,
    pools: [{ name: 'wk', quantity: 1 }],
    vmNamespace: VM_NS,
  });
  for (const m of machines)
    await createMachineVm(s.harvester.admin, {
      instanceName: m.instanceName,
      clusterName: name,
      vmNamespace: VM_NS,
    });
  return eventuallyValue(
    `guest cluster ${name}'s kubeconfig`,
    () => guests.client(NS, name).catch(() => undefined),
    (c): c is KubeClient => c !== undefined,
    60_000,
  ) as Promise<KubeClient>;
}

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
      const apiA = await guest('gv-a', guests);
      const apiB = await guest('gv-b', guests);
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

      const recorded = await eventuallyValue(
        (now) => `labels on Harvester: ${JSON.stringify([...now])}`,
        labels,
        (now) =>
          now.get(a1.hostPvc) === 'gv-a' && now.get(a2.hostPvc) === 'gv-a' && now.get(b1.hostPvc) === 'gv-b',
        60_000,
      );
      assert.equal(recorded.size >= 3, true);
      const seen = await eventuallyValue(
        'the GuestVolumesRecorded Event on gv-a',
        () => clusterEvents('gv-a', 'GuestVolumesRecorded'),
        (e) => e.length > 0,
      );
      assert.match(
        seen.join('\n'),
        new RegExp(`${VM_NS}/${a1.hostPvc} \\(guest PersistentVolume ${a1.hostPvc}`),
      );

      // gv-a's admin makes a PV naming gv-b's volume: it stays gv-b's, with a Warning on gv-a.
      await apiA.create<PersistentVolume>(Resources.persistentVolume, {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'copied-from-b' },
        spec: {
          csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: b1.hostPvc },
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
        },
      });
      const conflict = await eventuallyValue(
        'the GuestVolumeOwnedByOtherCluster Event on gv-a',
        () => clusterEvents('gv-a', 'GuestVolumeOwnedByOtherCluster'),
        (e) => e.length > 0,
      );
      assert.match(
        conflict[0] ?? '',
        new RegExp(`${b1.hostPvc}.*is labelled for guest cluster "gv-b": not relabelled`),
      );
      assert.equal((await labels()).get(b1.hostPvc), 'gv-b');
      assert.ok((await metric('harvester_machine_guest_volume_conflicts_total')) >= 1);
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
      assert.equal((await labels()).get(b1.hostPvc), 'gv-b');

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
    } finally {
      guests.close();
    }
  });
});
