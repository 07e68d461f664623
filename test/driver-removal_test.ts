// The first seed's scenario (docs/upstream/seeds.md#first-report, harvester/harvester#2825): a
// machine of guest cluster A with a boot disk, two hot-plugged workload volumes and one
// labelled unattached PVC, next to cluster
// B's machine and volumes. A whole-cluster removal (Rancher's annotation) leaves none of
// A's volumes and all of B's; a plain removal (node replacement) deletes only the boot disk.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ANNOTATION_REMOVE_ALL_PVCS,
  FINALIZER_HARVESTER_VM_CLEANUP,
  LABEL_GUEST_CLUSTER_NAME,
} from '../src/harvester/labels.js';
import { isConflict } from '../src/kube/errors.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { eventually } from './support/eventually.js';
import { newMachine, tempStore } from './support/machines.js';
import { livePvcs, vmPvcNames, waitPvcExists, waitPvcGone, recordedVolume } from './support/volumes.js';

const fixture = useSandbox();
const store = tempStore();
const ns = 'default';

interface GuestMachine {
  name: string;
  bootDisks: string[];
  workload: string[];
  unattached: string;
  driver: ReturnType<typeof newMachine>['driver'];
  log: ReturnType<typeof newMachine>['log'];
}

/** A machine of `cluster` with its boot disk, two hot-plugged workload volumes (one labelled, one
 *  not, as the released CSI driver leaves them) and one labelled PVC attached to nothing. */
async function guestMachine(
  sandbox: Sandbox,
  kubeconfig: string,
  cluster: string,
  name: string,
): Promise<GuestMachine> {
  const { admin } = sandbox.harvester;
  const { driver, log } = newMachine({ name, kubeconfig, storePath: store, clusterName: cluster });
  await driver.create();
  const bootDisks = await vmPvcNames(admin, ns, name);
  for (const disk of bootDisks) await waitPvcExists(admin, ns, disk);
  const workload = [
    await recordedVolume(sandbox.standIns.csi, admin, { namespace: ns, cluster: cluster, size: '1Gi' }),
    await sandbox.standIns.csi.createVolume({ namespace: ns, size: '2Gi' }),
  ];
  for (const pvcName of workload)
    await sandbox.standIns.csi.hotplug({ namespace: ns, vmName: name, pvcName });
  const unattached = await recordedVolume(sandbox.standIns.csi, admin, {
    namespace: ns,
    cluster: cluster,
    size: '1Gi',
  });
  return { name, bootDisks, workload, unattached, driver, log };
}

function volumesOf(m: GuestMachine): string[] {
  return [...m.bootDisks, ...m.workload, m.unattached];
}

for (const path of ['direct', 'via Rancher'] as const) {
  describe(`removal (${path} kubeconfig)`, () => {
    const kubeconfig = (): string =>
      path === 'direct'
        ? fixture.sandbox.kubeconfigs.harvesterDirect
        : fixture.sandbox.kubeconfigs.harvesterViaRancher;
    const tag = path === 'direct' ? 'd' : 'r';

    it('deletes every volume of a deleted guest cluster and none of another cluster', async () => {
      const { sandbox } = fixture;
      const { admin } = sandbox.harvester;
      const a = await guestMachine(
        sandbox,
        kubeconfig(),
        `clustera-${tag}`,
        `clustera-${tag}-pool1-6b7f9-aaaa1`,
      );
      const b = await guestMachine(
        sandbox,
        kubeconfig(),
        `clusterb-${tag}`,
        `clusterb-${tag}-pool1-5c8d2-bbbb1`,
      );
      assert.equal(a.bootDisks.length, 1);

      // What Rancher does when the whole cluster is deleted.
      await admin.patch(
        Resources.virtualMachine,
        { namespace: ns, name: a.name },
        {
          metadata: { annotations: { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' } },
        },
      );
      await a.driver.remove();

      for (const pvc of volumesOf(a)) await waitPvcGone(admin, ns, pvc);
      const live = await livePvcs(admin, ns);
      for (const pvc of volumesOf(b)) assert.ok(live.has(pvc), `cluster B's ${pvc} must stay`);
      assert.ok(
        await admin.find(Resources.virtualMachine, { namespace: ns, name: b.name }),
        'cluster B keeps its VM',
      );
      assert.match(
        a.log.text(),
        /Remove node\n(.*\n)*Force the removal of all persistent volume claims\n(.*\n)*Waiting for node removed/,
      );
      await b.driver.remove();
    });

    it('keeps the workload volumes when one node is replaced (plain removal)', async () => {
      const { sandbox } = fixture;
      const { admin } = sandbox.harvester;
      const a = await guestMachine(
        sandbox,
        kubeconfig(),
        `clusterc-${tag}`,
        `clusterc-${tag}-pool1-4d2a7-cccc1`,
      );
      await a.driver.remove();

      for (const pvc of a.bootDisks) await waitPvcGone(admin, ns, pvc);
      const live = await livePvcs(admin, ns);
      for (const pvc of [...a.workload, a.unattached])
        assert.ok(live.has(pvc), `workload volume ${pvc} must stay`);
      assert.doesNotMatch(a.log.text(), /Force the removal/);
    });
  });
}

describe('removal beside other guest clusters (ADR 0018)', () => {
  it('lists only its own cluster’s VMs and PVCs, and keeps a disk another VM of its cluster uses', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const sent: string[] = [];
    const name = 'clusters-pool1-2b3c4-ssss1';
    const a = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterViaRancher,
      storePath: store,
      clusterName: 'clusters',
      onRequest: (method, path) => sent.push(`${method} ${path}`),
    });
    await a.driver.create();
    const [boot = '?'] = await vmPvcNames(admin, ns, name);
    await waitPvcExists(admin, ns, boot);
    // Halted VMs written straight to the apiserver: four of other clusters, one of this
    // cluster using the machine's disk (as a rescue VM would), with labelled PVCs each.
    const halted = (vmName: string, cluster: string, claim: string) => ({
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: vmName, namespace: ns, labels: { [LABEL_GUEST_CLUSTER_NAME]: cluster } },
      spec: {
        runStrategy: 'Halted',
        template: {
          spec: {
            // A CPU and a memory size: Harvester's webhooks refuse a VM without them.
            domain: { cpu: { cores: 1 }, devices: {}, resources: { limits: { cpu: '1', memory: '1Gi' } } },
            volumes: [{ name: 'disk-0', persistentVolumeClaim: { claimName: claim } }],
          },
        },
      },
    });
    for (let i = 1; i <= 4; i++) {
      const pvc = await recordedVolume(sandbox.standIns.csi, admin, {
        namespace: ns,
        cluster: `other${i}`,
        size: '1Gi',
      });
      await admin.create(
        Resources.virtualMachine,
        halted(`other${i}-pool1-1a2b3-oooo${i}`, `other${i}`, pvc),
      );
    }
    // Harvester's VM validator lets a second VM use a claim only when it is ReadWriteMany and not
    // Longhorn's (v1.8.0 CheckBlockRWXVolumeForVM, which reads the provisioner from this
    // annotation first): the disk is one of another CSI driver's, as an NFS class's would be.
    const otherDriver = 'nfs.csi.k8s.io';
    await admin.patch(
      Resources.pvc,
      { namespace: ns, name: boot },
      {
        metadata: {
          annotations: {
            'volume.beta.kubernetes.io/storage-provisioner': otherDriver,
            'volume.kubernetes.io/storage-provisioner': otherDriver,
          },
        },
      },
    );
    // Made the moment before the removal: the removal may plan from a watch cache that has
    // not seen it yet, but checks its record against the VMs not older than it. (Harvester's
    // webhook judges from its own cache of the claim: again until that has the annotation.)
    await eventually("Harvester's validator to admit a second VM on the shared disk", () =>
      admin.create(Resources.virtualMachine, halted('clusters-rescue', 'clusters', boot)).then(
        () => true,
        (err: unknown) => {
          if (/already used by other VM/.test(String(err))) return false;
          throw err;
        },
      ),
    );
    sent.length = 0;

    await a.driver.remove();

    const query = (r: string) => new URLSearchParams(r.split('?')[1] ?? '');
    const lists = sent.filter((r) => /^GET \S*\/(virtualmachines|persistentvolumeclaims)(\?|$)/.test(r));
    assert.ok(lists.length > 0, sent.join('\n'));
    for (const list of lists)
      assert.equal(query(list).get('labelSelector'), `${LABEL_GUEST_CLUSTER_NAME}=clusters`, list);
    // The plan kept is made from a list not older than the record, sent after it.
    const record = sent.findIndex((r) => /^PATCH \S*\/virtualmachines\/clusters-pool1-2b3c4-ssss1$/.test(r));
    const deletion = sent.findIndex((r) => /^DELETE \S*\/virtualmachines\//.test(r));
    assert.ok(record >= 0 && deletion > record, sent.join('\n'));
    const check = sent
      .slice(record, deletion)
      .filter(
        (r) => /\/virtualmachines\?/.test(r) && query(r).get('resourceVersionMatch') === 'NotOlderThan',
      );
    assert.equal(check.length, 1, `no check "not older than" the record: ${sent.join('\n')}`);
    assert.ok((await livePvcs(admin, ns)).has(boot), `${boot} is used by clusters-rescue and must stay`);
    await admin.delete(Resources.virtualMachine, { namespace: ns, name: 'clusters-rescue' });
    for (let i = 1; i <= 4; i++)
      await admin.delete(Resources.virtualMachine, { namespace: ns, name: `other${i}-pool1-1a2b3-oooo${i}` });
  });
});

describe('removal of a VM whose claim name is hostile', () => {
  it('never records a claim name holding a comma: another VM’s disk and a shared volume stay', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const kubeconfig = sandbox.kubeconfigs.harvesterDirect;
    const a = newMachine({
      name: 'clusterh-pool1-3a4b5-hhhh1',
      kubeconfig,
      storePath: store,
      clusterName: 'clusterh',
    });
    const b = newMachine({
      name: 'clusterh-pool1-3a4b5-hhhh2',
      kubeconfig,
      storePath: store,
      clusterName: 'clusterh',
    });
    await a.driver.create();
    await b.driver.create();
    const [aBoot = '?'] = await vmPvcNames(admin, ns, 'clusterh-pool1-3a4b5-hhhh1');
    const [bBoot = '?'] = await vmPvcNames(admin, ns, 'clusterh-pool1-3a4b5-hhhh2');
    const shared = await sandbox.standIns.csi.createVolume({ namespace: ns, size: '1Gi' });
    for (const pvc of [aBoot, bBoot, shared]) await waitPvcExists(admin, ns, pvc);
    // Anyone who may edit the VM can write any claim name; Harvester splits the annotation on ",".
    const hostile = `${shared},${bBoot}`;
    const vm = await admin.get<KubeObject & { spec: { template: { spec: { volumes?: unknown[] } } } }>(
      Resources.virtualMachine,
      { namespace: ns, name: 'clusterh-pool1-3a4b5-hhhh1' },
    );
    const volumes = [
      ...(vm.spec.template.spec.volumes ?? []),
      { name: 'data-1', persistentVolumeClaim: { claimName: hostile } },
    ];
    await admin.patch(
      Resources.virtualMachine,
      { namespace: ns, name: 'clusterh-pool1-3a4b5-hhhh1' },
      { spec: { template: { spec: { volumes } } } },
    );

    await a.driver.remove();

    await waitPvcGone(admin, ns, aBoot);
    const live = await livePvcs(admin, ns);
    assert.ok(live.has(bBoot), `the other VM's disk ${bBoot} must stay`);
    assert.ok(live.has(shared), `the shared volume ${shared} must stay`);
    assert.ok(
      a.log.lines.some(
        (l) =>
          l.level === 'warn' &&
          l.line.startsWith(`Volume not deleted with the VM: claim name "${hostile}" is no PVC name`),
      ),
      a.log.text(),
    );
    await b.driver.remove();
  });
});

describe('removal on a Harvester whose VM controller does not clean up', () => {
  it('deletes the recorded volumes itself once the VM is gone, and only those', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const a = await guestMachine(
      sandbox,
      fixture.sandbox.kubeconfigs.harvesterDirect,
      'clustere',
      'clustere-pool1-1f2e3-eeee1',
    );
    // An older Harvester: no cleanup finalizer on the VM and nobody deleting its PVCs.
    await sandbox.faults.forgetVm(ns, a.name);
    // KubeVirt's stand-in may update the VM meanwhile: retry the optimistic write.
    for (let attempt = 1; ; attempt++) {
      const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name: a.name });
      const finalizers = (vm.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_HARVESTER_VM_CLEANUP);
      const written = await admin
        .patch(
          Resources.virtualMachine,
          { namespace: ns, name: a.name },
          { metadata: { finalizers, resourceVersion: vm.metadata.resourceVersion } },
        )
        .then(
          () => true,
          (err: unknown) => {
            if (isConflict(err) && attempt < 10) return false;
            throw err;
          },
        );
      if (written) break;
    }
    await a.driver.remove();

    for (const pvc of a.bootDisks) await waitPvcGone(admin, ns, pvc);
    assert.match(
      a.log.text(),
      new RegExp(`Deleting volume default/${a.bootDisks[0] ?? '?'} that Harvester left behind`),
    );
    const live = await livePvcs(admin, ns);
    for (const pvc of [...a.workload, a.unattached])
      assert.ok(live.has(pvc), `workload volume ${pvc} must stay`);
  });
});
