// Harvester's load balancer controller and the guest cluster's cloud provider as the sandbox
// plays them (docs/upstream/load-balancers.md): names and labels, IP pool allocation and
// release, DHCP, and Harvester's own guest-cluster cleanup, which only v1.8.0 and later do.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import {
  LB_ANNOTATION_CLUSTER,
  LB_LABEL_CLUSTER,
  LB_LABEL_SERVICE_NAME,
  LB_LABEL_SERVICE_NAMESPACE,
  type IpPool,
  type LoadBalancer,
} from '../../src/harvester/load-balancers.js';
import { ANNOTATION_REMOVE_ALL_PVCS, LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { createNamespace } from '../control-plane/access.js';
import { cloudProviderLbName, ensureGuestLoadBalancer, ensureIpPool } from './cloud-provider.js';
import { FINALIZER_LB_CONTROLLER, selectIpPool } from './harvester/load-balancer-controller.js';
import { driverVm, gone, useHarvester, waitUntil } from './testing.js';

type Lb = LoadBalancer & KubeObject;
type Pool = IpPool & KubeObject;

async function guestVm(client: KubeClient, ns: string, name: string, cluster: string): Promise<void> {
  const vm = driverVm(ns, name);
  vm.metadata.labels = { ...vm.metadata.labels, [LABEL_GUEST_CLUSTER_NAME]: cluster };
  await client.create(Resources.virtualMachine, vm);
}

async function setServerVersion(client: KubeClient, value: string): Promise<void> {
  const at = { name: 'server-version' };
  if (await client.find(Resources.setting, at)) await client.patch(Resources.setting, at, { value });
  else
    await client.create(Resources.setting, {
      apiVersion: 'harvesterhci.io/v1beta1',
      kind: 'Setting',
      metadata: at,
      value,
    } as KubeObject);
}

const pool = (client: KubeClient, name: string): Promise<Pool> =>
  client.get<Pool>(Resources.ipPool, { name });

describe("the cloud provider's load balancer names", () => {
  it('are <cluster>-<ns>-<service>- and the CRC-32 of that and the Service UID, cut to 63 characters', () => {
    // Digests computed with Python's zlib.crc32, an implementation independent of Node's.
    assert.equal(
      cloudProviderLbName('harv01', 'default', 'nginx', '6f1c2b9e-3d4a-4c1b-9a8e-0c2d3e4f5a6b'),
      'harv01-default-nginx-f793386a',
    );
    const long = cloudProviderLbName(
      'a-very-long-guest-cluster-name-for-tests',
      'default',
      'my-long-service-name',
      'uid-1',
    );
    assert.equal(long, 'a-very-long-guest-cluster-name-for-tests-default-my-lon71eb2e88');
    assert.equal(long.length, 63);
    assert.equal(
      cloudProviderLbName('1cluster', 'default', 'web', 'uid-2'),
      'a1cluster-default-web-111d50de',
    );
    assert.equal(crc32('abc').toString(16), '352441c2', "Node's CRC-32 is IEEE's");
  });
});

describe('load balancer stand-in', () => {
  const s = useHarvester({ name: 'standins-lb' });

  it('makes what the cloud provider makes, allocates from the pool, books it there and releases it on removal', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'lb-pool');
    await ensureIpPool(client, {
      name: `pool-${ns}`,
      subnet: '192.0.2.0/24',
      rangeStart: '192.0.2.10',
      rangeEnd: '192.0.2.11',
      gateway: '192.0.2.1',
      scope: { namespace: ns },
    });
    await assert.rejects(
      ensureGuestLoadBalancer(client, {
        cluster: 'gc1',
        namespace: ns,
        service: { namespace: 'default', name: 'web' },
      }),
      /guest cluster gc1 has no VM in .*: no cloud provider runs/,
    );
    await guestVm(client, ns, 'gc1-m1', 'gc1');
    const a = await ensureGuestLoadBalancer(client, {
      cluster: 'gc1',
      namespace: ns,
      service: { namespace: 'default', name: 'web', uid: 'u1' },
    });
    assert.equal(a.metadata.name, cloudProviderLbName('gc1', 'default', 'web', 'u1'));
    assert.deepEqual(
      [
        a.metadata.labels?.[LB_LABEL_CLUSTER],
        a.metadata.labels?.[LB_LABEL_SERVICE_NAMESPACE],
        a.metadata.labels?.[LB_LABEL_SERVICE_NAME],
      ],
      ['gc1', 'default', 'web'],
    );
    assert.equal(a.metadata.annotations?.[LB_ANNOTATION_CLUSTER], 'gc1');
    assert.deepEqual(a.spec, { ipam: 'pool', workloadType: 'cluster' });
    assert.deepEqual(a.status?.allocatedAddress, {
      ipPool: `pool-${ns}`,
      ip: '192.0.2.10',
      mask: '255.255.255.0',
      gateway: '192.0.2.1',
    });
    assert.equal(a.status?.address, '192.0.2.10');
    assert.ok(a.metadata.finalizers?.includes(FINALIZER_LB_CONTROLLER));
    const b = await ensureGuestLoadBalancer(client, {
      cluster: 'gc1',
      namespace: ns,
      service: { namespace: 'default', name: 'api', uid: 'u2' },
    });
    assert.equal(b.status?.allocatedAddress?.ip, '192.0.2.11');
    let p = await pool(client, `pool-${ns}`);
    assert.deepEqual(p.status?.allocated, {
      '192.0.2.10': `${ns}/${a.metadata.name}`,
      '192.0.2.11': `${ns}/${b.metadata.name}`,
    });
    assert.deepEqual([p.status?.total, p.status?.available], [2, 0]);

    await client.delete(Resources.loadBalancer, { namespace: ns, name: a.metadata.name });
    await waitUntil(
      client,
      Resources.loadBalancer,
      { namespace: ns, name: a.metadata.name },
      'the load balancer to go',
      gone,
    );
    p = await pool(client, `pool-${ns}`);
    assert.deepEqual(p.status?.allocated, { '192.0.2.11': `${ns}/${b.metadata.name}` });
    assert.deepEqual(p.status?.allocatedHistory, { '192.0.2.10': `${ns}/${a.metadata.name}` });
    assert.equal(p.status?.available, 1);

    const dhcp = await ensureGuestLoadBalancer(client, {
      cluster: 'gc1',
      namespace: ns,
      service: { namespace: 'default', name: 'dns' },
      ipam: 'dhcp',
    });
    assert.deepEqual(dhcp.status?.allocatedAddress, { ip: '0.0.0.0' });
  });

  it("deletes a removed guest cluster's load balancers itself from server-version v1.8.0 on, and only then", async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'lb-vm');
    const other = await createNamespace(client, 'lb-vm-other');
    await ensureIpPool(client, { name: `pool-${ns}`, subnet: '198.51.100.0/24', scope: { namespace: '*' } });
    for (const [n, vm, cluster] of [
      [ns, 'gc1-m1', 'gc1'],
      [ns, 'gc1-m2', 'gc1'],
      [ns, 'gc2-m1', 'gc2'],
      [other, 'gc1-x1', 'gc1'],
    ] as const)
      await guestVm(client, n, vm, cluster);
    const mine = await ensureGuestLoadBalancer(client, {
      cluster: 'gc1',
      namespace: ns,
      service: { namespace: 'default', name: 'web' },
    });
    const theirs = await ensureGuestLoadBalancer(client, {
      cluster: 'gc2',
      namespace: ns,
      service: { namespace: 'default', name: 'web' },
    });
    const elsewhere = await ensureGuestLoadBalancer(client, {
      cluster: 'gc1',
      namespace: other,
      service: { namespace: 'default', name: 'web' },
    });
    const exists = async (lb: Lb): Promise<boolean> =>
      (await client.find<Lb>(Resources.loadBalancer, {
        namespace: lb.metadata.namespace ?? '',
        name: lb.metadata.name,
      })) !== undefined;

    // Harvester 1.7: an annotated VM removed, and nothing happens to the load balancers.
    await setServerVersion(client, 'v1.7.1');
    await client.patch(
      Resources.virtualMachine,
      { namespace: ns, name: 'gc1-m1' },
      { metadata: { annotations: { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' } } },
    );
    await client.delete(Resources.virtualMachine, { namespace: ns, name: 'gc1-m1' });
    await waitUntil(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'gc1-m1' },
      'gc1-m1 to go',
      gone,
    );
    await s.standIns.idle();
    assert.ok(await exists(mine), 'Harvester v1.7.1 leaves the load balancer');

    // Harvester 1.8: a VM removed without the annotation (scale-down) leaves them too...
    await setServerVersion(client, 'v1.8.0');
    await client.delete(Resources.virtualMachine, { namespace: ns, name: 'gc2-m1' });
    await waitUntil(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'gc2-m1' },
      'gc2-m1 to go',
      gone,
    );
    await s.standIns.idle();
    assert.ok(await exists(theirs), 'a scale-down keeps the load balancer');
    // ...an annotated one deletes its cluster's, in its namespace only.
    await client.patch(
      Resources.virtualMachine,
      { namespace: ns, name: 'gc1-m2' },
      { metadata: { annotations: { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' } } },
    );
    await client.delete(Resources.virtualMachine, { namespace: ns, name: 'gc1-m2' });
    await waitUntil(
      client,
      Resources.loadBalancer,
      { namespace: ns, name: mine.metadata.name },
      "gc1's load balancer to go",
      gone,
    );
    await s.standIns.idle();
    assert.ok(await exists(theirs), "another cluster's load balancer stays");
    assert.ok(await exists(elsewhere), "the cluster's load balancer in another namespace stays");
    const p = await pool(client, `pool-${ns}`);
    assert.equal(
      Object.values(p.status?.allocated ?? {}).includes(`${ns}/${mine.metadata.name}`),
      false,
      'its address went back to the pool',
    );
  });
});

describe('IP pool selection', () => {
  const lb = (annotations: Record<string, string>, namespace = 'ns1'): Lb => ({
    metadata: { name: 'x', namespace, annotations },
    spec: { workloadType: 'cluster' },
  });
  const p = (name: string, selector: IpPool['spec']['selector'], labels?: Record<string, string>): Pool => ({
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: { ranges: [{ subnet: '10.0.0.0/24' }], selector },
  });
  const pools = [
    p('global', {}, { 'loadbalancer.harvesterhci.io/global-ip-pool': 'true' }),
    p('ns1-low', { priority: 1, scope: [{ namespace: 'ns1', project: '*', guestCluster: '*' }] }),
    p('ns1-high', { priority: 5, scope: [{ namespace: 'ns1', project: '*', guestCluster: '*' }] }),
    p('net', { network: 'default/vlan2', scope: [{ namespace: '*', project: '*', guestCluster: '*' }] }),
    p('gc-only', { scope: [{ namespace: 'ns2', guestCluster: 'gc9' }] }),
  ];

  it('takes the matching pool of highest priority, one of the same network only, the global pool last', () => {
    assert.equal(selectIpPool(pools, lb({}), false)?.metadata.name, 'ns1-high');
    assert.equal(
      selectIpPool(pools, lb({ 'loadbalancer.harvesterhci.io/network': 'default/vlan2' }), false)?.metadata
        .name,
      'net',
    );
    assert.equal(selectIpPool(pools, lb({}, 'ns3'), false)?.metadata.name, 'global');
    // gc-only leaves the project empty: it matches a guest cluster's load balancer only loosely.
    const gc9 = lb({ [LB_ANNOTATION_CLUSTER]: 'gc9', 'loadbalancer.harvesterhci.io/project': 'p1' }, 'ns2');
    assert.equal(selectIpPool(pools, gc9, false)?.metadata.name, 'global');
    assert.equal(selectIpPool(pools, gc9, true)?.metadata.name, 'gc-only');
  });
});
