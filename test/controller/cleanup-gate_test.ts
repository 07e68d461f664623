// The cleanup gate on real control planes with the real Cluster API manager (Rancher's own
// controllers played by the stand-in, with a removal job that records what it found): every
// removal of a deleted cluster's machine starts only after its VM was annotated, Cluster API
// holding each Machine at its pre-terminate hook until then; a scale-down and an opted-out
// cluster are never annotated; pool-level credentials and an expired-then-renewed credential
// work; the Machine condition survives Cluster API's own status
// writes; the credential report finds an expired pool credential beside a valid cluster one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { setTokenExpiry } from '../../sandbox/control-plane/access.js';
import { scaleDownPool, type GuestMachine } from '../../sandbox/rancher/guest-cluster.js';
import { NS, VM_NS, conditionSurvivesClusterApi, useGateWorld } from './gate-fixture.js';
import { eventuallyValue } from '../support/eventually.js';

const fixture = useGateWorld();
const HOOK = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/harvester-machine-cleanup';
const DAY = 86_400_000;
const later = (): Date => new Date(Date.now() + DAY);

const guest: (typeof fixture.world)['guest'] = (spec) => fixture.world.guest(spec);

async function waitHooked(machines: GuestMachine[]): Promise<void> {
  for (const m of machines) {
    await waitFor<KubeObject>(fixture.world.rancher.admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: m.name,
      timeoutMs: 30_000,
      description: `the cleanup hook on Machine ${m.name}`,
      until: (o) => o?.metadata.annotations?.[HOOK] !== undefined,
    });
  }
}

const observed = (m: GuestMachine) => fixture.world.observations.filter((o) => o.machine === m.name);
const deleteCluster = (name: string) =>
  fixture.world.rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name });

describe(`cleanup gate (controller + Cluster API ${fixture.version.version})`, () => {
  let keep: GuestMachine[] = [];

  it('annotates every VM of a deleted 3-machine cluster before its removal runs, and leaves another cluster alone', async () => {
    const { world } = fixture;
    const { kubeconfig } = await world.harvesterUser('h-main', later());
    await world.saveCredential('cc-main', kubeconfig);
    const doomed = await guest({
      name: 'c-main',
      clusterCredential: 'cattle-global-data:cc-main',
      pools: [
        { name: 'cp', quantity: 1 },
        { name: 'wk', quantity: 2 },
      ],
    });
    keep = await guest({
      name: 'c-keep',
      clusterCredential: 'cattle-global-data:cc-main',
      pools: [{ name: 'wk', quantity: 2 }],
    });
    await waitHooked([...doomed, ...keep]);
    await deleteCluster('c-main');
    await world.waitGone(Resources.provisioningCluster, 'c-main');
    for (const m of doomed)
      assert.deepEqual(
        observed(m).map((o) => [o.vmFound, o.annotation]),
        [[true, 'true']],
        m.name,
      );
    for (const m of keep) {
      const vm = await world.harvester.admin.get<KubeObject>(Resources.virtualMachine, {
        namespace: VM_NS,
        name: m.instanceName,
      });
      assert.equal(vm.metadata.annotations?.['harvesterhci.io/removeAllPersistentVolumeClaims'], undefined);
      const machine = await world.rancher.admin.get<KubeObject>(Resources.capiMachine, {
        namespace: NS,
        name: m.name,
      });
      assert.ok(machine.metadata.annotations?.[HOOK], 'the surviving cluster keeps its gates');
    }
    const annotated = await world.events('HarvesterVMAnnotated');
    assert.equal(annotated.filter((e) => doomed.some((m) => e.involvedObject?.name === m.name)).length, 3);
  });

  it('releases a scaled-down machine at once, without annotating its VM', async () => {
    const { world } = fixture;
    const victim = keep[0] as GuestMachine;
    await scaleDownPool(world.rancher.admin, {
      namespace: NS,
      cluster: 'c-keep',
      pool: 'wk',
      machine: victim.name,
    });
    await waitFor(world.rancher.admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: victim.name,
      timeoutMs: 30_000,
      description: 'the scaled-down machine to go',
      until: (o) => o === undefined,
    });
    assert.deepEqual(
      observed(victim).map((o) => [o.vmFound, o.annotation]),
      [[true, undefined]],
    );
    const released = await world.events('CleanupGateReleased');
    assert.ok(
      released.some(
        (e) => e.involvedObject?.name === victim.name && /scale-down or replacement/.test(e.message ?? ''),
      ),
    );
  });

  it("uses a pool's own credential when the cluster has none", async () => {
    const { world } = fixture;
    const { user, kubeconfig } = await world.harvesterUser('h-pool', later());
    await world.saveCredential('cc-pool', kubeconfig);
    const machines = await guest({
      name: 'c-pool',
      pools: [{ name: 'wk', quantity: 2, credential: 'cattle-global-data:cc-pool' }],
    });
    await waitHooked(machines);
    await deleteCluster('c-pool');
    await world.waitGone(Resources.provisioningCluster, 'c-pool');
    for (const m of machines) {
      assert.deepEqual(
        observed(m).map((o) => [o.annotation, o.kubeconfigUser]),
        [['true', `bootstrap token ${user.tokenId}`]],
      );
    }
  });

  it('holds the gate on an expired credential (Event, condition, summary), then cleans up after renewal', async () => {
    const { world } = fixture;
    const expired = new Date(Date.now() - 60_000);
    const { user, kubeconfig } = await world.harvesterUser('h-exp', expired);
    await world.saveCredential('cc-exp', kubeconfig, expired);
    const machines = await guest({
      name: 'c-exp',
      clusterCredential: 'cattle-global-data:cc-exp',
      pools: [{ name: 'wk', quantity: 2 }],
    });
    await waitHooked(machines);
    await deleteCluster('c-exp');
    const first = machines[0] as GuestMachine;
    const held = await waitFor<
      KubeObject & { status?: { conditions?: Array<{ type: string; status: string; reason?: string }> } }
    >(world.rancher.admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: first.name,
      timeoutMs: 30_000,
      description: 'the held-gate condition',
      until: (o) =>
        o?.status?.conditions?.some(
          (c) =>
            c.type === 'HarvesterVolumeCleanup' &&
            c.status === 'False' &&
            c.reason === 'HarvesterCredentialRejected',
        ) ?? false,
    });
    assert.ok(held?.metadata.annotations?.[HOOK], 'the hook is still there');
    const hm = await world.rancher.admin.get<KubeObject>(Resources.harvesterMachine, {
      namespace: NS,
      name: first.name,
    });
    assert.equal(
      hm.metadata.deletionTimestamp,
      undefined,
      'Cluster API holds the HarvesterMachine at the hook',
    );
    await conditionSurvivesClusterApi(world, fixture.version, first.name);
    const rejected = (await world.events('HarvesterCredentialRejected')).filter(
      (e) => e.involvedObject?.name === first.name,
    );
    assert.ok(rejected.length > 0);
    assert.match(rejected[0]?.message ?? '', /cattle-global-data:cc-exp.*Renew/);
    assert.doesNotMatch(
      rejected[0]?.message ?? '',
      new RegExp(user.token.split('.')[1] ?? 'never'),
      'no token secret in Events',
    );
    const status = await waitFor<KubeObject & { data?: Record<string, string> }>(world.rancher.admin, {
      type: Resources.configMap,
      namespace: 'hm-system',
      name: 'harvester-machine-controller-status',
      timeoutMs: 20_000,
      description: 'the status summary to list the held gate',
      until: (o) => (o?.data?.['summary.txt'] ?? '').includes(first.name),
    });
    assert.match(status?.data?.['summary.txt'] ?? '', /EXPIRED\s+cattle-global-data\/cc-exp/);
    assert.equal(observed(first).length, 0, 'no removal ran while the gate was held');

    await setTokenExpiry(world.harvester.admin, user, later());
    await world.saveCredential('cc-exp', kubeconfig, later());
    await world.waitGone(Resources.provisioningCluster, 'c-exp');
    for (const m of machines)
      assert.deepEqual(
        observed(m).map((o) => o.annotation),
        ['true'],
        m.name,
      );
  });

  it('never annotates the VMs of an opted-out cluster', async () => {
    const { world } = fixture;
    const machines = await guest({
      name: 'c-opt',
      clusterCredential: 'cattle-global-data:cc-main',
      optOut: true,
      pools: [{ name: 'wk', quantity: 2 }],
    });
    await waitHooked(machines);
    await deleteCluster('c-opt');
    await world.waitGone(Resources.provisioningCluster, 'c-opt');
    for (const m of machines)
      assert.deepEqual(
        observed(m).map((o) => [o.vmFound, o.annotation]),
        [[true, undefined]],
      );
  });

  it('reports a pool on an expired credential beside a valid cluster credential, with the fix', async () => {
    const { world } = fixture;
    const expired = new Date(Date.now() - 60_000);
    const { kubeconfig } = await world.harvesterUser('h-stale', expired);
    await world.saveCredential('cc-stale', kubeconfig, expired);
    await guest({
      name: 'c-mis',
      clusterCredential: 'cattle-global-data:cc-main',
      pools: [{ name: 'wk', quantity: 1, credential: 'cattle-global-data:cc-stale' }],
    });
    // Events are not watched here: a short poll for a list that should fill.
    const events = await eventuallyValue(
      'two HarvesterCredentialMismatch Events on c-mis',
      async () =>
        (await world.events('HarvesterCredentialMismatch')).filter((e) => e.involvedObject?.name === 'c-mis'),
      (l) => l.length >= 2,
      20_000,
    );
    const pool = events.find((e) => (e.message ?? '').startsWith('machine pool wk '));
    const machine = events.find((e) => (e.message ?? '').startsWith('HarvesterMachine '));
    assert.ok(
      pool && machine,
      'mismatch Events on the provisioning cluster, for the pool and for its machine',
    );
    assert.match(pool.message ?? '', /cc-stale.*cc-main.*Renew cloud credential cattle-global-data:cc-stale/);
    assert.match(pool.message ?? '', /machinePools\/0\/cloudCredentialSecretName/);
    // The summary (written a few seconds later) holds every command.
    await waitFor<KubeObject & { data?: Record<string, string> }>(world.rancher.admin, {
      type: Resources.configMap,
      namespace: 'hm-system',
      name: 'harvester-machine-controller-status',
      timeoutMs: 20_000,
      description: 'the status summary to hold the fix',
      until: (o) => /fix: .*patch secret cc-stale/.test(o?.data?.['summary.txt'] ?? ''),
    });
    const expiredEvents = await eventuallyValue(
      'a HarvesterCredentialExpired Event on cc-stale',
      async () =>
        (await world.events('HarvesterCredentialExpired')).filter(
          (e) => e.involvedObject?.name === 'cc-stale',
        ),
      (l) => l.length > 0,
      20_000,
    );
    assert.ok(expiredEvents.length > 0, 'an Event on the expired credential Secret');
  });

  it('exposes metrics, ran under the chart RBAC without a denial, and logged no secret', async () => {
    const { world } = fixture;
    const port = world.controller?.port;
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const annotations = Number(/^harvester_machine_cleanup_vm_annotations_total (\d+)$/m.exec(metrics)?.[1]);
    assert.ok(annotations >= 7, metrics);
    assert.match(metrics, /harvester_machine_credentials\{state="expired"\} [1-9]/);
    assert.match(metrics, /harvester_machine_controller_leader 1/);
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
    const lease = await world.rancher.admin.get<KubeObject & { spec?: { holderIdentity?: string } }>(
      Resources.lease,
      { namespace: 'hm-system', name: 'harvester-machine-controller' },
    );
    assert.equal(lease.spec?.holderIdentity, 'hm-test-0');
    const logs = world.logLines.join('\n');
    assert.doesNotMatch(logs, /forbidden/i, 'the chart RBAC is enough');
    assert.doesNotMatch(
      logs,
      /BEGIN [A-Z ]*PRIVATE KEY|\b[a-z0-9]{6}\.[a-z0-9]{16}\b/,
      'no key or bootstrap token secret in the logs',
    );
  });
});
