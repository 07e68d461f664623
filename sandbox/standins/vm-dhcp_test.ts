// vm-dhcp-controller's stand-in (harvester/vm-dhcp-controller, docs/upstream/vm-dhcp-controller.md)
// and the networks' side of the guests, against a real apiserver and garbage collector: an
// IPPool labels its network and books its reserved and excluded addresses; a VM with a MAC on
// the network gets a VirtualMachineNetworkConfig owned by it, an address bound to its MAC in
// the pool's status, and its guest that address by DHCP; a full pool refuses with the add-on's
// words; the binding goes with the VM. On a VLAN without DHCP a guest has only the address its
// network data sets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VmDhcpIpPool, VmNetworkConfig } from '../../src/harvester/fixed-addresses/vm-dhcp.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { createNamespace } from '../control-plane/access.js';
import { vlanNetwork } from '../sandbox-seeds.js';
import { FINALIZER_VMNETCFG, VmDhcpTypes } from './harvester/vm-dhcp-controller.js';
import { driverVm, garbageCollectorKnowsVms, gone, useHarvester, waitUntil } from './testing.js';
import type { VirtualMachine, VirtualMachineInstance } from './types.js';

type Pool = VmDhcpIpPool & KubeObject;
type NetCfg = VmNetworkConfig & KubeObject;

function ipPool(namespace: string, name: string, network: string, start: string, end: string): Pool {
  return {
    apiVersion: 'network.harvesterhci.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name, namespace },
    spec: {
      networkName: network,
      ipv4Config: {
        serverIP: '192.168.48.77',
        cidr: '192.168.48.0/24',
        router: '192.168.48.1',
        dns: ['192.168.48.1'],
        pool: { start, end, exclude: [end] },
      },
    },
  };
}

/** The driver's VM with a pinned MAC on `network` and, optionally, its network data. */
function vmOn(
  namespace: string,
  name: string,
  network: string,
  mac: string,
  networkData?: string,
): VirtualMachine {
  const vm = driverVm(namespace, name);
  const spec = vm.spec.template.spec;
  spec.domain.devices = {
    ...spec.domain.devices,
    interfaces: [{ name: 'nic-0', model: 'virtio', bridge: {}, macAddress: mac }],
  };
  spec.networks = [{ name: 'nic-0', multus: { networkName: network } }];
  if (networkData)
    spec.volumes = [
      { name: 'cloudinitdisk', cloudInitNoCloud: { userData: '#cloud-config\n', networkData } },
    ];
  return vm;
}

describe('vm-dhcp-controller stand-in and the networks', () => {
  const s = useHarvester({ name: 'standins-vmdhcp', networksWithoutDhcp: [] });

  const until = <T extends KubeObject>(
    type: Parameters<typeof waitUntil>[1],
    at: { namespace: string; name: string },
    what: string,
    check: (o: T | undefined) => boolean,
  ) => waitUntil<T>(s.client, type, at, what, check, 30_000);

  async function readyPool(ns: string, network: string, start: string, end: string): Promise<Pool> {
    const net = network.split('/')[1] ?? network;
    await s.client.create(Resources.networkAttachmentDefinition, vlanNetwork(ns, net, 48));
    await s.client.create<Pool>(VmDhcpTypes.ipPool, ipPool(ns, net, network, start, end));
    const pool = await until<Pool>(
      VmDhcpTypes.ipPool,
      { namespace: ns, name: net },
      'the pool to be ready',
      (p) => (p?.status?.conditions ?? []).some((c) => c.type === 'CacheReady' && c.status === 'True'),
    );
    assert.ok(pool);
    return pool;
  }

  it('labels the pool’s network, books its server, router and excluded addresses, counts what is left', async () => {
    const ns = await createNamespace(s.client, 'pool');
    const pool = await readyPool(ns, `${ns}/net-48`, '192.168.48.70', '192.168.48.80');
    const nad = await s.client.get(Resources.networkAttachmentDefinition, { namespace: ns, name: 'net-48' });
    assert.equal(nad.metadata.labels?.['network.harvesterhci.io/ippool-namespace'], ns);
    assert.equal(nad.metadata.labels?.['network.harvesterhci.io/ippool-name'], 'net-48');
    // 11 addresses, the server (.77) and the excluded end (.80) revoked; the router (.1) is outside the range.
    assert.deepEqual(pool.status?.ipv4, {
      allocated: { '192.168.48.77': 'RESERVED', '192.168.48.80': 'EXCLUDED' },
      used: 0,
      available: 9,
    });
    for (const type of ['Registered', 'CacheReady', 'AgentReady'])
      assert.ok(
        pool.status?.conditions?.some((c) => c.type === type && c.status === 'True'),
        type,
      );
  });

  it('binds a VM’s MAC to an address of the pool, which the guest then gets by DHCP; the binding goes with the VM', async () => {
    await garbageCollectorKnowsVms(s.client);
    const ns = await createNamespace(s.client, 'bind');
    await readyPool(ns, `${ns}/net-48`, '192.168.48.81', '192.168.48.90');
    const mac = '02:48:00:00:00:01';
    const vm = await s.client.create<VirtualMachine>(
      Resources.virtualMachine,
      vmOn(ns, 'web-1', `${ns}/net-48`, mac),
    );
    const cfg = await until<NetCfg>(
      VmDhcpTypes.networkConfig,
      { namespace: ns, name: 'web-1' },
      'an allocation',
      (c) => Boolean(c?.status?.networkConfigs?.[0]?.allocatedIPAddress),
    );
    assert.ok(cfg);
    assert.deepEqual(
      cfg.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
      [['VirtualMachine', 'web-1', vm.metadata.uid]],
    );
    assert.deepEqual(cfg.metadata.finalizers, [FINALIZER_VMNETCFG]);
    assert.deepEqual(cfg.spec?.networkConfigs, [{ networkName: `${ns}/net-48`, macAddress: mac }]);
    const address = cfg.status?.networkConfigs?.[0]?.allocatedIPAddress ?? '';
    assert.match(address, /^192\.168\.48\.(8[1-9])$/);
    assert.ok(cfg.status?.conditions?.some((c) => c.type === 'Allocated' && c.status === 'True'));
    const pool = await s.client.get<Pool>(VmDhcpTypes.ipPool, { namespace: ns, name: 'net-48' });
    assert.equal(pool.status?.ipv4?.allocated?.[address], mac);
    assert.equal(pool.status?.ipv4?.used, 1);

    const vmi = await until<VirtualMachineInstance>(
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'web-1' },
      'the guest’s address',
      (v) => Boolean(v?.status?.interfaces?.[0]?.ipAddress),
    );
    assert.equal(vmi?.status?.interfaces?.[0]?.ipAddress, address, 'the DHCP agent serves the binding');
    assert.match(
      vmi?.status?.interfaces?.[0]?.ipAddresses?.[1] ?? '',
      /^fe80::/,
      'no router on the pool’s network',
    );

    await s.client.delete(
      Resources.virtualMachine,
      { namespace: ns, name: 'web-1' },
      { propagationPolicy: 'Foreground' },
    );
    await until(VmDhcpTypes.networkConfig, { namespace: ns, name: 'web-1' }, 'the binding to go', gone);
    await until<Pool>(
      VmDhcpTypes.ipPool,
      { namespace: ns, name: 'net-48' },
      'the address to be free',
      (p) => p?.status?.ipv4?.allocated?.[address] === undefined && p?.status?.ipv4?.used === 0,
    );
  });

  it('refuses a MAC when the pool is full, in the add-on’s words, and keeps a VM’s address through a restart of its instance', async () => {
    const ns = await createNamespace(s.client, 'full');
    // .91 and .92, .92 excluded: one address.
    await readyPool(ns, `${ns}/net-48`, '192.168.48.91', '192.168.48.92');
    await s.client.create(Resources.virtualMachine, vmOn(ns, 'a', `${ns}/net-48`, '02:48:00:00:00:0a'));
    const first = await until<NetCfg>(
      VmDhcpTypes.networkConfig,
      { namespace: ns, name: 'a' },
      'a’s address',
      (c) => Boolean(c?.status?.networkConfigs?.[0]?.allocatedIPAddress),
    );
    assert.equal(first?.status?.networkConfigs?.[0]?.allocatedIPAddress, '192.168.48.91');
    await s.client.create(Resources.virtualMachine, vmOn(ns, 'b', `${ns}/net-48`, '02:48:00:00:00:0b'));
    const refused = await until<NetCfg>(
      VmDhcpTypes.networkConfig,
      { namespace: ns, name: 'b' },
      'b refused',
      (c) => (c?.status?.conditions ?? []).some((x) => x.type === 'Allocated' && x.status === 'False'),
    );
    const allocated = refused?.status?.conditions?.find((x) => x.type === 'Allocated');
    assert.equal(allocated?.reason, 'Error');
    assert.equal(allocated?.message, `no more ip addresses left in network ${ns}/net-48 ipam`);

    // A restart (what virt-api's restart subresource writes): a new instance, the same MAC and address.
    // virt-controller makes the instance on its own pace: wait until it runs with its address.
    const old = await until<VirtualMachineInstance>(
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'a' },
      'a’s first instance with its address',
      (v) => Boolean(v?.status?.interfaces?.[0]?.ipAddress),
    );
    if (old === undefined) throw new Error('a’s first instance never reported an address');
    await s.client.patch(
      Resources.virtualMachine,
      { namespace: ns, name: 'a', subresource: 'status' },
      { status: { stateChangeRequests: [{ action: 'Stop', uid: old.metadata.uid }, { action: 'Start' }] } },
    );
    const again = await until<VirtualMachineInstance>(
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'a' },
      'a new instance with its address',
      (v) =>
        v !== undefined &&
        v.metadata.uid !== old.metadata.uid &&
        Boolean(v.status?.interfaces?.[0]?.ipAddress),
    );
    assert.equal(again?.status?.interfaces?.[0]?.ipAddress, '192.168.48.91');
  });

  it('on a VLAN without DHCP: the address the network data sets, or none', async () => {
    const ns = await createNamespace(s.client, 'static');
    await s.client.create(Resources.networkAttachmentDefinition, vlanNetwork(ns, 'vlan100', 100));
    s.standIns.configure({ networksWithoutDhcp: [`${ns}/vlan100`] });
    const data =
      'version: 1\nconfig:\n  - type: physical\n    name: eth0\n    mac_address: "02:64:00:00:00:01"\n    subnets:\n      - {type: static, address: 192.168.100.10/24, gateway: 192.168.100.1, dns_nameservers: [192.168.100.1]}\n';
    await s.client.create(
      Resources.virtualMachine,
      vmOn(ns, 'fixed', `${ns}/vlan100`, '02:64:00:00:00:01', data),
    );
    await s.client.create(
      Resources.virtualMachine,
      vmOn(ns, 'nothing', `${ns}/vlan100`, '02:64:00:00:00:02'),
    );
    const fixed = await until<VirtualMachineInstance>(
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'fixed' },
      'the configured address',
      (v) => Boolean(v?.status?.interfaces?.[0]?.ipAddress),
    );
    assert.deepEqual(fixed?.status?.interfaces?.[0]?.ipAddresses?.slice(0, 1), ['192.168.100.10']);
    const nothing = await until<VirtualMachineInstance>(
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'nothing' },
      'running',
      (v) => v?.status?.phase === 'Running' && (v.status.interfaces ?? []).length > 0,
    );
    await new Promise((r) => setTimeout(r, 1_000)); // well past the guest agent's delay
    const later = await s.client.get<VirtualMachineInstance>(Resources.virtualMachineInstance, {
      namespace: ns,
      name: 'nothing',
    });
    assert.ok(nothing);
    assert.equal(later.status?.interfaces?.[0]?.ipAddress, undefined, 'no DHCP answers: no address');
  });
});
