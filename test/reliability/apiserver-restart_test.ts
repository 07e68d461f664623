// The Harvester kube-apiserver restarted (or down for a while) in the middle of a create and
// of a remove. Either the operation finishes once the apiserver is back, or it fails with an
// error that names what it was doing and a rerun finishes it. In every case: one VM per
// machine, never a second one, and the volumes of another machine untouched (same UIDs).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeError } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { useSandbox } from '../support/sandbox-fixture.js';
import { tempStore } from '../support/machines.js';
import { vmPvcNames, waitPvcExists, waitPvcGone, recordedVolume } from '../support/volumes.js';
import { failureOf, livePvcUids, vmsOfMachine, watchedMachine } from './helpers.js';

const fixture = useSandbox();
const store = tempStore();
const ns = 'default';

/** A machine of another guest cluster, with a boot disk, a hot-plugged and an unattached volume. */
const bystander = { name: 'rs-bystander-pool1-a1b2c-x1', vmUid: '', pvcs: new Map<string, string>() };
let bystanderReady: Promise<void> | undefined;
/** Made once, by the first test (node:test runs top-level hooks per suite). */
const withBystander = (): Promise<void> => (bystanderReady ??= makeBystander());

async function makeBystander(): Promise<void> {
  const { sandbox } = fixture;
  const { admin } = sandbox.harvester;
  const m = watchedMachine({
    name: bystander.name,
    kubeconfig: sandbox.kubeconfigs.harvesterDirect,
    storePath: store,
    clusterName: 'rs-other',
  });
  await m.driver.create();
  m.driver.close();
  const hot = await recordedVolume(sandbox.standIns.csi, admin, {
    namespace: ns,
    cluster: 'rs-other',
    size: '1Gi',
  });
  await sandbox.standIns.csi.hotplug({ namespace: ns, vmName: bystander.name, pvcName: hot });
  await recordedVolume(sandbox.standIns.csi, admin, { namespace: ns, cluster: 'rs-other', size: '1Gi' });
  for (const pvc of await vmPvcNames(admin, ns, bystander.name)) await waitPvcExists(admin, ns, pvc);
  bystander.vmUid = (
    await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name: bystander.name })
  ).metadata.uid!;
  const live = await livePvcUids(admin, ns);
  for (const [name, uid] of live) bystander.pvcs.set(name, uid);
}

async function assertBystanderUntouched(): Promise<void> {
  const { admin } = fixture.sandbox.harvester;
  const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name: bystander.name });
  assert.equal(vm.metadata.uid, bystander.vmUid, "the other machine's VM is the same one");
  assert.equal(vm.metadata.deletionTimestamp, undefined);
  const live = await livePvcUids(admin, ns);
  for (const [pvc, uid] of bystander.pvcs) {
    assert.equal(live.get(pvc), uid, `the other machine's volume ${pvc} is untouched`);
  }
}

/** A machine of cluster `cluster` with a hot-plugged workload volume, ready to be removed. */
async function machineWithWorkload(name: string, cluster: string, removeTimeout: number) {
  const { sandbox } = fixture;
  const m = watchedMachine({
    name,
    kubeconfig: sandbox.kubeconfigs.harvesterDirect,
    storePath: store,
    clusterName: cluster,
    flags: { 'harvester-remove-timeout': removeTimeout },
  });
  await m.driver.create();
  const saved = m.driver.getConfigRaw();
  m.driver.close();
  const boot = await vmPvcNames(sandbox.harvester.admin, ns, name);
  for (const pvc of boot) await waitPvcExists(sandbox.harvester.admin, ns, pvc);
  const workload = await recordedVolume(sandbox.standIns.csi, sandbox.harvester.admin, {
    namespace: ns,
    cluster,
    size: '1Gi',
  });
  await sandbox.standIns.csi.hotplug({ namespace: ns, vmName: name, pvcName: workload });
  return { saved, boot, workload };
}

describe('kube-apiserver restarted during a create', () => {
  it('right after the VM was sent: the create finishes (or fails clearly and a rerun does), with one VM', async (t) => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    await withBystander();
    const name = 'rs-create-pool1-b2c3d-x1';
    let restart: Promise<void> | undefined;
    const spec = {
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'rs-c',
    };
    const m = watchedMachine({
      ...spec,
      clientOptions: {
        onRequest: (method, path) => {
          if (!restart && method === 'POST' && /\/virtualmachines$/.test(path)) {
            restart = sandbox.harvester.restartApiserver();
          }
        },
      },
    });
    const err = await failureOf(m.driver.create());
    assert.ok(restart, 'the restart was triggered by the VM create request');
    await restart;
    m.driver.close();
    if (err === undefined) {
      t.diagnostic('branch: the create rode out the restart');
      assert.match(m.driver.config.IPAddress, /^\d+\.\d+\.\d+\.\d+$/);
    } else {
      const reason = err instanceof Error ? err.message : 'not an Error';
      t.diagnostic(`branch: the create failed (${reason.slice(0, 120)}); rerunning`);
      assert.ok(
        err instanceof KubeError && ['Unreachable', 'Timeout', 'ServerError'].includes(err.kind),
        reason,
      );
      assert.match(err.message, /virtualmachine|cannot reach|timed out/);
      const before = await vmsOfMachine(admin, ns, name);
      const again = watchedMachine(spec);
      await again.driver.create();
      again.driver.close();
      assert.match(again.driver.config.IPAddress, /^\d+\.\d+\.\d+\.\d+$/);
      const after = await vmsOfMachine(admin, ns, name);
      if (before[0])
        assert.equal(after[0]?.metadata.uid, before[0].metadata.uid, 'the rerun continued with the VM');
    }
    const vms = await vmsOfMachine(admin, ns, name);
    assert.equal(vms.length, 1, 'exactly one VM for the machine');
    const disks = await vmPvcNames(admin, ns, name);
    assert.equal(disks.length, 1, 'one boot disk');
    const pvcs = await livePvcUids(admin, ns);
    assert.equal([...pvcs.keys()].filter((p) => p.startsWith(`${name}-`)).length, 1, 'no second boot volume');
    await assertBystanderUntouched();
  });
});

describe('kube-apiserver restarted during a remove', () => {
  it('while the removal waits for the VM to go: it finishes after the restart, boot disk gone, workload kept', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    await withBystander();
    const name = 'rs-remove-pool1-c3d4e-x1';
    const { saved, boot, workload } = await machineWithWorkload(name, 'rs-r', 180);
    await sandbox.faults.holdRemoval(ns, name);
    const m = watchedMachine({ name, kubeconfig: '', storePath: store, savedConfig: saved });
    const removal = failureOf(m.driver.remove());
    try {
      await m.progressWhere((e) => /held by finalizer/.test(e.state));
      await sandbox.harvester.restartApiserver();
    } finally {
      await sandbox.faults.releaseRemoval(ns, name);
    }
    assert.equal(await removal, undefined, 'the removal finished after the restart');
    m.driver.close();
    assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name }), undefined);
    for (const pvc of boot) await waitPvcGone(admin, ns, pvc, 90_000);
    assert.ok((await livePvcUids(admin, ns)).has(workload), 'the hot-plugged workload volume stays');
    await assertBystanderUntouched();
  });

  it('down from the plan’s write until the removal gives up: a clear error, a consistent VM, and a rerun finishes', async (t) => {
    const t0 = Date.now();
    const phase = (what: string): void =>
      t.diagnostic(`${what} after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    await withBystander();
    const name = 'rs-down-pool1-d4e5f-x1';
    const { saved, boot, workload } = await machineWithWorkload(name, 'rs-d', 5);
    phase('machine ready');
    let down: Promise<void> | undefined;
    const m = watchedMachine({
      name,
      kubeconfig: '',
      storePath: store,
      savedConfig: saved,
      clientOptions: {
        onRequest: (method, path) => {
          if (!down && method === 'PATCH' && path.endsWith(`/virtualmachines/${name}`)) {
            down = sandbox.harvester.stopApiserver();
          }
        },
      },
    });
    let err: unknown;
    try {
      err = await failureOf(m.driver.remove());
      phase('the removal failed');
      assert.ok(down, 'the apiserver was stopped when the plan was written');
      await down;
    } finally {
      await sandbox.harvester.startApiserver();
      phase('the apiserver is back');
    }
    m.driver.close();
    assert.ok(
      err instanceof KubeError && ['Unreachable', 'Timeout', 'ServerError'].includes(err.kind),
      String(err),
    );
    // It says what it was doing, where: the request that failed (on the VM, its instance, one of
    // its volumes, which a removal reads by name, or a list of the namespace), or the wait that
    // timed out.
    const objects = [name, ...boot, ...workload].join('|');
    assert.match(
      err.message,
      new RegExp(
        `^(get|list|patch|delete|watch) \\S+ default(/(${objects}))?: |waiting for VM default/${name}`,
      ),
    );
    // Consistent: the VM is either untouched or on its way out, and every volume is still there.
    const vm = await admin.find<KubeObject>(Resources.virtualMachine, { namespace: ns, name });
    const live = await livePvcUids(admin, ns);
    if (vm && !vm.metadata.deletionTimestamp)
      for (const pvc of [...boot, workload]) assert.ok(live.has(pvc), pvc);

    const rerun = watchedMachine({ name, kubeconfig: '', storePath: store, savedConfig: saved });
    // After an outage kube-controller-manager's garbage collector takes its time (it re-learns
    // the VM kind on its 30 s discovery pass), and the VM's foreground deletion waits for it.
    rerun.driver.config.HarvesterMachine.RemoveTimeoutSeconds = 180;
    await rerun.driver.remove();
    phase('the rerun removed the VM');
    rerun.driver.close();
    assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name }), undefined);
    for (const pvc of boot) await waitPvcGone(admin, ns, pvc, 90_000);
    phase('its boot volume is gone');
    assert.ok((await livePvcUids(admin, ns)).has(workload), 'the hot-plugged workload volume stays');
    await assertBystanderUntouched();
  });
});
