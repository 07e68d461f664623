// The load balancers of deleted guest clusters on the whole sandbox:
// Harvester's load balancer controller and the cloud provider played by the stand-ins, the
// real Cluster API manager with Rancher's stand-in running the real driver's Remove in process
// as its rm job, the controller under the chart's RBAC
// reaching Harvester through the cloud credential. What is checked is what an operator
// sees: which load balancers are left on Harvester, which addresses the IP pool still
// hands out as taken, the Events on the cluster and the metrics.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IpPool, LoadBalancer } from '../../src/harvester/load-balancers.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import {
  createGuestCluster,
  createMachineVm,
  scaleDownPool,
  type GuestMachine,
} from '../../sandbox/rancher/guest-cluster.js';
import type { Sandbox } from '../../sandbox/sandbox.js';
import { ensureGuestLoadBalancer, ensureIpPool } from '../../sandbox/standins/cloud-provider.js';
import { eventuallyValue } from '../support/eventually.js';
import { useSandboxWorld } from './gate-fixture.js';

const NS = 'fleet-lb';
const SYSTEM_NS = 'hm-lb';
const VM_NS = 'default';
const POOL = 'lb-test-pool';

const world = useSandboxWorld({
  namespace: NS,
  systemNamespace: SYSTEM_NS,
  prepare: (sandbox) =>
    ensureIpPool(sandbox.harvester.admin, {
      name: POOL,
      subnet: '203.0.113.0/24',
      gateway: '203.0.113.1',
    }).then(() => undefined),
});
const sbx = (): Sandbox => world.sandbox;

/** A guest cluster as Rancher made it, its VMs on Harvester, and one load balancer per Service. */
async function guest(
  name: string,
  opts: {
    machines: number;
    services: string[];
    optOut?: boolean;
    /** Its chart values' global.cattle.clusterName, when not its own name (a copied cluster). */
    chartClusterName?: string;
  },
): Promise<{ machines: GuestMachine[]; lbs: Array<LoadBalancer & KubeObject> }> {
  const s = sbx();
  const machines = await createGuestCluster(s.rancher.admin, {
    namespace: NS,
    name,
    clusterCredential: `${s.cloudCredential.namespace}:${s.cloudCredential.name}`,
    pools: [{ name: 'wk', quantity: opts.machines }],
    vmNamespace: VM_NS,
    downstreamKubeconfig: s.kubeconfigs.rancherLocal,
    ...(opts.optOut ? { optOut: true } : {}),
    ...(opts.chartClusterName ? { cloudProviderClusterName: opts.chartClusterName } : {}),
  });
  for (const m of machines)
    await createMachineVm(s.harvester.admin, {
      instanceName: m.instanceName,
      clusterName: name,
      vmNamespace: VM_NS,
    });
  const lbs = [];
  for (const service of opts.services)
    lbs.push(
      await ensureGuestLoadBalancer(s.harvester.admin, {
        cluster: opts.chartClusterName ?? name,
        guestCluster: name,
        namespace: VM_NS,
        service: { namespace: 'default', name: service },
      }),
    );
  return { machines, lbs };
}

async function setServerVersion(value: string): Promise<void> {
  await sbx().harvester.admin.patch(Resources.setting, { name: 'server-version' }, { value });
}

const lbNames = async (): Promise<string[]> =>
  (await sbx().harvester.admin.list<KubeObject>(Resources.loadBalancer, { namespace: VM_NS })).items
    .filter((l) => !l.metadata.deletionTimestamp)
    .map((l) => l.metadata.name)
    .sort();

const allocated = async (): Promise<Record<string, string>> =>
  (await sbx().harvester.admin.get<IpPool & KubeObject>(Resources.ipPool, { name: POOL })).status
    ?.allocated ?? {};

async function deleteClusterAndWait(name: string): Promise<void> {
  const { rancher } = sbx();
  await rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name });
  await waitFor(rancher.admin, {
    type: Resources.provisioningCluster,
    namespace: NS,
    name,
    timeoutMs: 120_000,
    description: `cluster ${name} to be deleted`,
    until: (o) => o === undefined,
  });
}

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

describe('load balancers of deleted guest clusters (controller + stand-ins on the sandbox)', () => {
  it('on Harvester v1.7: a whole-cluster deletion deletes its load balancers and frees their IPs; a scale-down and another cluster keep theirs', async () => {
    await setServerVersion('v1.7.1');
    const a = await guest('lb-a', { machines: 2, services: ['web', 'api'] });
    const b = await guest('lb-b', { machines: 1, services: ['web'] });
    const [aWeb, aApi] = a.lbs.map((l) => l.metadata.name);
    const bWeb = b.lbs[0]?.metadata.name ?? '';
    assert.equal(Object.keys(await allocated()).length, 3);

    // Scale lb-b down to nothing: its only VM goes, the cluster stays, so do its load balancers.
    const only = b.machines[0] as GuestMachine;
    await scaleDownPool(sbx().rancher.admin, {
      namespace: NS,
      cluster: 'lb-b',
      pool: 'wk',
      machine: only.name,
    });
    await waitFor(sbx().rancher.admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: only.name,
      timeoutMs: 60_000,
      description: 'the scaled-down machine to go',
      until: (o) => o === undefined,
    });

    await deleteClusterAndWait('lb-a');
    await eventuallyValue(
      (left) => `lb-a's load balancers still on Harvester: ${left.join(', ')}`,
      lbNames,
      (left) => !left.includes(aWeb ?? '') && !left.includes(aApi ?? ''),
      60_000,
    );
    assert.deepEqual(await lbNames(), [bWeb], "lb-b's load balancer stays (scale-down, not a deletion)");
    const taken = await eventuallyValue(
      (now) => `lb-a's addresses still taken: ${JSON.stringify(now)}`,
      allocated,
      (now) => Object.values(now).length === 1,
      30_000,
    );
    assert.deepEqual(Object.values(taken), [`${VM_NS}/${bWeb}`]);
    const events = await eventuallyValue(
      'the HarvesterLoadBalancersDeleted Event on lb-a',
      () => clusterEvents('lb-a', 'HarvesterLoadBalancersDeleted'),
      (e) => e.length > 0,
    );
    assert.match(events[0] ?? '', /deleted 2 load balancer\(s\) of guest cluster lb-a/);
    assert.match(
      events[0] ?? '',
      new RegExp(`${aWeb ?? ''} for Service default/web holding 203\\.0\\.113\\.\\d+ from IP pool ${POOL}`),
    );
    assert.match(events[0] ?? '', /Harvester v1\.7\.1 leaves them/);
    assert.equal(await metric('harvester_machine_lb_deleted_total'), 2);
    assert.equal((await clusterEvents('lb-b', 'HarvesterLoadBalancersDeleted')).length, 0);
    // The cluster objects' last updates (Cluster API's finalizer, Rancher's) come after the
    // cleanup: they start no second one that would find no HarvesterMachine left.
    assert.deepEqual(await clusterEvents('lb-a', 'HarvesterLoadBalancerCleanupSkipped'), []);
  });

  it('two clusters whose chart values share a cluster name keep each other’s load balancers: refused, naming the other', async () => {
    await setServerVersion('v1.7.1');
    // lb-dup-b was made from a copy of lb-dup-a's values: its cloud provider labels its load
    // balancers lb-dup-a too.
    const a = await guest('lb-dup-a', { machines: 1, services: ['web'] });
    const b = await guest('lb-dup-b', { machines: 1, services: ['web'], chartClusterName: 'lb-dup-a' });
    const deletedBefore = await metric('harvester_machine_lb_deleted_total');
    await deleteClusterAndWait('lb-dup-a');
    const events = await eventuallyValue(
      'the HarvesterLoadBalancerCleanupRefused Event on lb-dup-a',
      () => clusterEvents('lb-dup-a', 'HarvesterLoadBalancerCleanupRefused'),
      (e) => e.length > 0,
      60_000,
    );
    assert.match(
      events[0] ?? '',
      new RegExp(`guest cluster ${NS}/lb-dup-b also labels its load balancers "lb-dup-a"`),
    );
    const left = await lbNames();
    assert.ok(
      left.includes(b.lbs[0]?.metadata.name ?? '-'),
      `lb-dup-b's load balancer is kept: ${left.join(', ')}`,
    );
    assert.ok(left.includes(a.lbs[0]?.metadata.name ?? '-'), 'and lb-dup-a’s, which cannot be told from it');
    assert.equal(await metric('harvester_machine_lb_deleted_total'), deletedBefore, 'none deleted');
  });

  it('keeps the load balancers of an opted-out cluster, and says so', async () => {
    await setServerVersion('v1.7.1');
    const c = await guest('lb-opt', { machines: 1, services: ['web'], optOut: true });
    await deleteClusterAndWait('lb-opt');
    const events = await eventuallyValue(
      'the HarvesterLoadBalancerCleanupSkipped Event on lb-opt',
      () => clusterEvents('lb-opt', 'HarvesterLoadBalancerCleanupSkipped'),
      (e) => e.length > 0,
    );
    assert.match(events[0] ?? '', /opted out by harvesterhci.io\/skipHarvesterMachineProvisionCleanup/);
    assert.ok(
      (await lbNames()).includes(c.lbs[0]?.metadata.name ?? ''),
      'the opted-out cluster keeps its load balancer',
    );
  });

  it('on Harvester v1.8: Harvester deletes them itself when the annotated VMs go, and the controller finds none left', async () => {
    await setServerVersion('v1.8.0');
    const d = await guest('lb-new', { machines: 2, services: ['web'] });
    const deletedBefore = await metric('harvester_machine_lb_deleted_total');
    await deleteClusterAndWait('lb-new');
    const events = await eventuallyValue(
      'the HarvesterLoadBalancersNoneLeft Event on lb-new',
      () => clusterEvents('lb-new', 'HarvesterLoadBalancersNoneLeft'),
      (e) => e.length > 0,
    );
    assert.match(events[0] ?? '', /Harvester v1\.8\.0 deletes them itself/);
    assert.ok(!(await lbNames()).includes(d.lbs[0]?.metadata.name ?? ''));
    assert.equal(
      await metric('harvester_machine_lb_deleted_total'),
      deletedBefore,
      'the controller deleted none',
    );
  });
});
