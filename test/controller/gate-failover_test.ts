// The gate's failure modes on the real Cluster API, with the controller as its own processes
// (as the chart runs it, two replicas, chart RBAC): the leader killed in the middle of a
// cluster deletion, with gates held, and the standby taking over the Lease and finishing it;
// and a gate held by a credential that is never renewed, released at the deadline so the
// deletion goes on: Rancher's rm job runs without the annotation and, with the same expired
// credential, fails as it would without the controller (force-machine-remove then ends it).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE } from '../../src/rancher/labels.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { CAPI_V1BETA2 } from '../../sandbox/capi/index.js';
import { setTokenExpiry } from '../../sandbox/control-plane/access.js';
import type { GuestMachine } from '../../sandbox/rancher/guest-cluster.js';
import {
  startControllerProcess,
  type ControllerProcess,
} from '../../sandbox/walkthrough/controller-process.js';
import { eventually } from '../support/eventually.js';
import {
  NS,
  SYSTEM_NS,
  VM_NS,
  chartKubeconfig,
  conditionSurvivesClusterApi,
  useGateWorld,
} from './gate-fixture.js';

// v1beta2 stored (the default Cluster API of the other files is v1.10.6): both versions run in the suite.
const fixture = useGateWorld({ controller: false, clusterApi: CAPI_V1BETA2 });
const DAY = 86_400_000;
const HELD = 'HarvesterCredentialRejected';

type Machine = KubeObject & {
  status?: { conditions?: Array<{ type: string; status: string; reason?: string }> };
};

let dir = '';
let kubeconfig = '';
const running: ControllerProcess[] = [];

function replica(name: string, extraArgs: string[] = []): ControllerProcess {
  const c = startControllerProcess({
    dir,
    name,
    rancherKubeconfig: kubeconfig,
    namespace: NS,
    systemNamespace: SYSTEM_NS,
    extraArgs: ['--probe-interval', '1m', ...extraArgs],
  });
  running.push(c);
  return c;
}

async function leaseHolder(): Promise<string | undefined> {
  const lease = await fixture.world.rancher.admin.find<KubeObject & { spec?: { holderIdentity?: string } }>(
    Resources.lease,
    { namespace: SYSTEM_NS, name: 'harvester-machine-controller' },
  );
  return lease?.spec?.holderIdentity;
}

/** A cluster whose only credential is expired: every gate of it holds until renewal or the deadline. */
async function heldCluster(name: string): Promise<{ machines: GuestMachine[]; renew: () => Promise<void> }> {
  const { world } = fixture;
  const expired = new Date(Date.now() - 60_000);
  const { user, kubeconfig: harvesterKubeconfig } = await world.harvesterUser(`h-${name}`, expired);
  await world.saveCredential(`cc-${name}`, harvesterKubeconfig, expired);
  const machines = await world.guest({
    name,
    clusterCredential: `cattle-global-data:cc-${name}`,
    pools: [{ name: 'wk', quantity: 2 }],
  });
  return {
    machines,
    renew: async () => {
      await setTokenExpiry(world.harvester.admin, user, new Date(Date.now() + DAY));
      await world.saveCredential(`cc-${name}`, harvesterKubeconfig, new Date(Date.now() + DAY));
    },
  };
}

async function waitHeld(machine: string): Promise<Machine | undefined> {
  return waitFor<Machine>(fixture.world.rancher.admin, {
    type: Resources.capiMachine,
    namespace: NS,
    name: machine,
    timeoutMs: 60_000,
    description: `the gate of ${machine} held on the expired credential`,
    until: (o) =>
      o?.status?.conditions?.some((c) => c.type === 'HarvesterVolumeCleanup' && c.reason === HELD) ?? false,
  });
}

describe(`cleanup gate failover and deadline (controller processes + Cluster API ${fixture.version.version})`, () => {
  // Inside the suite: the file's world (a root hook) is up by then.
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-failover-'));
    kubeconfig = await chartKubeconfig(fixture.world.rancher, { namespace: NS, systemNamespace: SYSTEM_NS });
  });
  after(async () => {
    for (const c of running) await c.stop().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a standby takes over from a leader killed mid-deletion and finishes it: every VM annotated before its removal', async () => {
    const { world } = fixture;
    const leader = replica('leader');
    await leader.waitForLine((l) => l.msg === 'caches synced', 'caches synced as leader');
    const standby = replica('standby');
    const { machines, renew } = await heldCluster('c-fail');
    await world.rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name: 'c-fail' });
    for (const m of machines) await waitHeld(m.name);
    assert.ok((await leaseHolder())?.endsWith(`-${leader.pid ?? ''}`), 'the first replica led');
    await conditionSurvivesClusterApi(world, fixture.version, (machines[0] as GuestMachine).name);

    await leader.kill();
    await renew();
    const tookOver = Date.now();
    await world.waitGone(Resources.provisioningCluster, 'c-fail', 90_000);
    assert.ok((await leaseHolder())?.endsWith(`-${standby.pid ?? ''}`), 'the standby holds the Lease');
    assert.ok(
      standby.lines().some((l) => l.msg === 'became leader'),
      'the standby logged that it became leader',
    );
    for (const m of machines)
      assert.deepEqual(
        world.observations.filter((o) => o.machine === m.name).map((o) => [o.vmFound, o.annotation]),
        [[true, 'true']],
        `${m.name}: its rm job started after its VM was annotated`,
      );
    const annotated = standby.lines().filter((l) => l.event === 'HarvesterVMAnnotated');
    assert.deepEqual(
      machines.filter((m) => annotated.some((l) => l.object === `Machine ${NS}/${m.name}`)).length,
      machines.length,
      'the standby annotated them',
    );
    // The Lease's duration is 15 s: the takeover cannot be much sooner.
    assert.ok(Date.now() - tookOver < 60_000);
    await standby.stop();
  });

  it('a gate held by a credential never renewed is released at the deadline, and the deletion goes on', async () => {
    const { world } = fixture;
    const controller = replica('deadline', ['--gate-deadline', '8s']);
    await controller.waitForLine((l) => l.msg === 'caches synced', 'caches synced');
    const { machines } = await heldCluster('c-dead');
    await world.rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name: 'c-dead' });
    const first = machines[0] as GuestMachine;
    const held = await waitHeld(first.name);
    const deletedAt = Date.parse(held?.metadata.deletionTimestamp ?? '');
    assert.equal(
      world.observations.filter((o) => o.machine === first.name).length,
      0,
      'no removal while held',
    );

    // Released at the deadline, Cluster API deletes each HarvesterMachine and Rancher's rm job
    // runs, with the same expired credential: it fails, as it would without the controller.
    for (const m of machines) {
      const at = `${NS}/${m.name}`;
      await eventually(`the rm job of ${m.name} to have run and failed`, () =>
        Promise.resolve(world.standIn.removals.some((r) => r.machine === at && r.ok === false)),
      );
      const first = world.standIn.removals.find((r) => r.machine === at);
      // deletionTimestamp has second precision: allow for its truncation.
      assert.ok(
        (first?.startedAt ?? 0) >= deletedAt + 8_000 - 1_000,
        `${m.name}'s removal started ${(first?.startedAt ?? 0) - deletedAt} ms after its deletion, not before the deadline`,
      );
      const vm = await world.harvester.admin.get<KubeObject>(Resources.virtualMachine, {
        namespace: VM_NS,
        name: m.instanceName,
      });
      assert.equal(vm.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS], undefined, 'never annotated');
    }
    const exceeded = (await world.events('CleanupGateDeadlineExceeded')).filter((e) =>
      machines.some((m) => e.involvedObject?.name === m.name),
    );
    assert.equal(exceeded.length, machines.length, 'a CleanupGateDeadlineExceeded Event per machine');
    // Rancher's escape hatch for a removal that cannot succeed: the deletion then completes.
    for (const m of machines)
      await world.rancher.admin.patch(
        Resources.harvesterMachine,
        { namespace: NS, name: m.name },
        {
          metadata: { annotations: { [RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE]: 'true' } },
        },
      );
    await world.waitGone(Resources.provisioningCluster, 'c-dead', 90_000);
    await controller.stop();
  });
});
