// --harvester-ip-pool-info on the sandbox: one fixed address per machine from a pool on a
// VLAN without DHCP, claimed through the apiserver (one ConfigMap per address, owned by the
// VM), reported at once and by the guest, kept through stop/start/restart, freed by Remove and
// by a failed create, refused in PreCreateCheck when the pool is full; concurrent creates never
// share an address; Harvester's own IP pool (vm-dhcp-controller) when the network has one; the
// pool's labels and annotations on the VM and its pod.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { claimName } from '../src/harvester/fixed-addresses/ip-pool.js';
import { claimObject, LABEL_ADDRESS_CLAIM } from '../src/harvester/fixed-addresses/address-claims.js';
import {
  AddressClaimRefusedError,
  AddressPoolExhaustedError,
} from '../src/driver/fixed-addresses/fixed-address.js';
import { HarvesterDriver } from '../src/driver/harvester-driver.js';
import { MachineState } from '../src/driver/machine-driver.js';
import type { Vm, Vmi } from '../src/harvester-access/harvester-api.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { createTokenUser, tokenKubeconfig } from '../sandbox/control-plane/access.js';
import {
  DRIVER_CLUSTER_RULES,
  DRIVER_RULES,
  SEED_STATIC_SUBNET,
  vlanNetwork,
} from '../sandbox/sandbox-seeds.js';
import { VmDhcpTypes } from '../sandbox/standins/harvester/vm-dhcp-controller.js';
import { ExtraResources } from '../sandbox/standins/names.js';
import type { Pod } from '../sandbox/standins/types.js';
import { eventually } from './support/eventually.js';
import { captureLog, newMachine, tempStore } from './support/machines.js';
import { useSandbox } from './support/sandbox-fixture.js';

const fixture = useSandbox();
const store = tempStore();
const ns = 'default';
const NETWORK = `${ns}/vlan100`;

const pool = (range: string, over: Record<string, unknown> = {}): string =>
  JSON.stringify({
    network: NETWORK,
    range,
    prefix: 24,
    gateway: SEED_STATIC_SUBNET.gateway,
    dns: [SEED_STATIC_SUBNET.dns],
    ...over,
  });

function machine(name: string, flags: Record<string, string>) {
  const m = newMachine({
    name,
    kubeconfig: fixture.sandbox.kubeconfigs.harvesterDirect,
    storePath: store,
    clusterName: 'fixed',
    flags: { 'harvester-network-name': NETWORK, ...flags },
  });
  after(() => m.driver.close());
  return m;
}

const claims = async (): Promise<Array<KubeObject & { data?: Record<string, string> }>> =>
  (
    await fixture.sandbox.harvester.admin.list<KubeObject & { data?: Record<string, string> }>(
      Resources.configMap,
      {
        namespace: ns,
        labelSelector: LABEL_ADDRESS_CLAIM,
      },
    )
  ).items.filter((c) => !c.metadata.deletionTimestamp);
const vmi = (name: string) =>
  fixture.sandbox.harvester.admin.get<Vmi>(Resources.virtualMachineInstance, { namespace: ns, name });
const guestAddress = async (name: string): Promise<string | undefined> => {
  let address: string | undefined;
  await eventually(`the guest of ${name} to report its address`, async () => {
    address = (await vmi(name).catch(() => undefined))?.status?.interfaces?.[0]?.ipAddress;
    return Boolean(address);
  });
  return address;
};

describe('fixed addresses (--harvester-ip-pool-info)', () => {
  it('gives three machines created at once three addresses of the range, kept through stop, start and restart, freed by Remove', async () => {
    const range = '192.168.100.10-192.168.100.19';
    const names = ['fixed-pool1-abc12-a', 'fixed-pool1-abc12-b', 'fixed-pool1-abc12-c'];
    const machines = names.map((n) => machine(n, { 'harvester-ip-pool-info': pool(range) }));
    await Promise.all(machines.map((m) => m.driver.preCreateCheck()));
    await Promise.all(machines.map((m) => m.driver.create()));
    const addresses = machines.map((m) => m.driver.config.IPAddress);
    assert.equal(new Set(addresses).size, 3, `distinct: ${addresses.join(', ')}`);
    for (const a of addresses) assert.match(a, /^192\.168\.100\.1\d$/);
    assert.deepEqual(
      addresses.slice().sort(),
      ['192.168.100.10', '192.168.100.11', '192.168.100.12'],
      'the first free ones, in order',
    );
    for (const [i, m] of machines.entries()) {
      assert.equal(await m.driver.getIP(), addresses[i]);
      assert.equal(
        await guestAddress(names[i] ?? ''),
        addresses[i],
        'the guest configured it from its network data',
      );
      assert.match(m.log.text(), new RegExp(`Get machine ip: ${addresses[i]?.replaceAll('.', '\\.') ?? ''}`));
      assert.doesNotMatch(m.log.text(), /Waiting for node get ip/, 'no wait for the guest agent');
    }
    // Each claim is named for its address and owned by its machine's VM.
    const held = await claims();
    assert.equal(held.length, 3);
    for (const [i, name] of names.entries()) {
      const vm = await fixture.sandbox.harvester.admin.get<Vm>(Resources.virtualMachine, {
        namespace: ns,
        name,
      });
      const claim = held.find((c) => c.metadata.name === claimName(NETWORK, addresses[i] ?? ''));
      assert.deepEqual(
        claim?.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
        [['VirtualMachine', name, vm.metadata.uid]],
      );
      const nic = vm.spec.template.spec?.domain.devices.interfaces?.[0];
      assert.match(nic?.macAddress ?? '', /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/, 'the MAC is pinned');
      assert.equal(claim?.data?.['mac'], nic?.macAddress);
    }

    // rancher-machine loads the saved config for every command; the address comes with it.
    const [first] = machines;
    assert.ok(first);
    const reloaded = new HarvesterDriver({ logger: captureLog().logger });
    reloaded.setConfigRaw(first.driver.getConfigRaw());
    after(() => reloaded.close());
    await reloaded.stop();
    assert.equal(await reloaded.getState(), MachineState.Stopped);
    await reloaded.start();
    assert.equal(await reloaded.getIP(), addresses[0]);
    const before = await vmi(names[0] ?? '');
    await reloaded.restart();
    const after_ = await vmi(names[0] ?? '');
    assert.notEqual(after_.metadata.uid, before.metadata.uid);
    assert.equal(await guestAddress(names[0] ?? ''), addresses[0], 'the new instance has the same address');
    assert.equal(await reloaded.getIP(), addresses[0]);

    await Promise.all([reloaded.remove(), machines[1]?.driver.remove(), machines[2]?.driver.remove()]);
    assert.deepEqual(await claims(), [], 'every address is free again');
  });

  it('refuses a full pool in PreCreateCheck, naming the pool and who holds its addresses', async () => {
    const range = '192.168.100.30-192.168.100.31';
    const a = machine('fixed-pool2-abc12-a', {
      'harvester-ip-pool-info': pool(range, { exclude: ['192.168.100.31'] }),
    });
    await a.driver.create();
    const b = machine('fixed-pool2-abc12-b', {
      'harvester-ip-pool-info': pool(range, { exclude: ['192.168.100.31'] }),
    });
    await assert.rejects(
      b.driver.preCreateCheck(),
      (err: Error) =>
        err.name === 'PreCreateCheckError' &&
        err.message.includes(
          `address pool ${NETWORK} ${range} has no free address: 1 address, held by 192.168.100.30 (fixed-pool2-abc12-a)`,
        ) &&
        err.message.includes('(--harvester-ip-pool-info)'),
    );
    await a.driver.remove();
    await b.driver.preCreateCheck();
  });

  it('releases the address of a create that fails before its VM exists', async () => {
    const { admin } = fixture.sandbox.harvester;
    const name = 'fixed-pool3-abc12-a';
    // Another VM by that name (not this machine's): the create is refused after the claim.
    await admin.create(Resources.virtualMachine, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name, namespace: ns },
      // What Harvester's webhooks require of any VM: a CPU and a memory size.
      spec: {
        runStrategy: 'Halted',
        template: {
          spec: {
            domain: { cpu: { cores: 1 }, devices: {}, resources: { limits: { cpu: '1', memory: '1Gi' } } },
          },
        },
      },
    } as KubeObject);
    const m = machine(name, { 'harvester-ip-pool-info': pool('192.168.100.40-192.168.100.41') });
    await assert.rejects(m.driver.create(), /already exists/);
    assert.match(m.log.text(), /Released address 192\.168\.100\.40: the machine was not created/);
    assert.deepEqual(await claims(), []);
    await admin.delete(Resources.virtualMachine, { namespace: ns, name });
  });

  it('continues a create that stopped before adopting its claim: the same address, adopted', async () => {
    const { admin } = fixture.sandbox.harvester;
    const m = machine('fixed-pool4-abc12-a', {
      'harvester-ip-pool-info': pool('192.168.100.50-192.168.100.52'),
    });
    await m.driver.create();
    const address = m.driver.config.IPAddress;
    const name = claimName(NETWORK, address);
    // What a crash between the VM's create and the adoption leaves: an unowned claim.
    await admin.patch(Resources.configMap, { namespace: ns, name }, { metadata: { ownerReferences: null } });
    const again = machine('fixed-pool4-abc12-a', {
      'harvester-ip-pool-info': pool('192.168.100.50-192.168.100.52'),
    });
    await again.driver.create();
    assert.equal(again.driver.config.IPAddress, address);
    const claim = await admin.get(Resources.configMap, { namespace: ns, name });
    assert.equal(claim.metadata.ownerReferences?.[0]?.name, 'fixed-pool4-abc12-a');
    assert.equal((await claims()).length, 1, 'no second claim');
    await again.driver.remove();
    assert.deepEqual(await claims(), []);
  });

  it('removes the VM even when its credential may no longer read the claims (the garbage collector frees them)', async () => {
    const { sandbox } = fixture;
    const name = 'fixed-pool9-abc12-a';
    const m = machine(name, { 'harvester-ip-pool-info': pool('192.168.100.160-192.168.100.161') });
    await m.driver.create();
    const user = await createTokenUser(sandbox.harvester.admin, {
      expiresAt: new Date(Date.now() + 3_600_000),
      rules: [...DRIVER_RULES.filter((r) => !r.resources.includes('configmaps')), ...DRIVER_CLUSTER_RULES],
    });
    const kubeconfig = tokenKubeconfig({
      name: 'harvester',
      server: sandbox.proxy.url,
      caPem: sandbox.proxy.caPem,
      token: user.token,
    });
    const { log, logger } = captureLog();
    const removing = new HarvesterDriver({ logger, argv: ['--harvester-kubeconfig-content', kubeconfig] });
    after(() => removing.close());
    removing.setConfigRaw(m.driver.getConfigRaw());
    await eventually('the new user may read VMs', async () =>
      removing.getState().then(
        () => true,
        () => false,
      ),
    );
    await removing.remove();
    assert.match(log.text(), /its address claims could not be checked .*forbidden/i);
    await eventually(
      'the garbage collector to free the address',
      async () => (await claims()).length === 0,
      60_000,
    );
  });

  it('gives two creates of one machine at once one VM and one address', async () => {
    const { admin } = fixture.sandbox.harvester;
    const name = 'fixed-pool8-abc12-a';
    const info = pool('192.168.100.150-192.168.100.159');
    const [one, two] = [
      machine(name, { 'harvester-ip-pool-info': info }),
      machine(name, { 'harvester-ip-pool-info': info }),
    ];
    await Promise.all([one.driver.create(), two.driver.create()]);
    assert.equal(one.driver.config.IPAddress, two.driver.config.IPAddress);
    const held = await claims();
    assert.equal(held.length, 1, held.map((c) => c.metadata.name).join(', '));
    const vm = await admin.get<Vm>(Resources.virtualMachine, { namespace: ns, name });
    assert.equal(held[0]?.metadata.ownerReferences?.[0]?.uid, vm.metadata.uid);
    await one.driver.remove();
    assert.deepEqual(await claims(), []);
  });

  it('gives 20 machines created at once against a 10-address pool exactly 10 addresses and 10 clear refusals', async () => {
    const { admin } = fixture.sandbox.harvester;
    const range = '192.168.100.100-192.168.100.109';
    const machines = Array.from({ length: 20 }, (_, i) =>
      machine(`race-pool5-abc12-${String(i).padStart(2, '0')}`, { 'harvester-ip-pool-info': pool(range) }),
    );
    const started = Date.now();
    await Promise.all(machines.map((m) => m.driver.preCreateCheck()));
    const results = await Promise.allSettled(machines.map((m) => m.driver.create()));
    const seconds = (Date.now() - started) / 1000;
    const created = results.flatMap((r, i) => {
      const m = machines[i];
      return r.status === 'fulfilled' && m ? [m] : [];
    });
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
    assert.equal(created.length, 10, refused.map((e) => e.message).join('\n'));
    assert.equal(refused.length, 10);
    for (const err of refused) {
      assert.ok(err instanceof AddressPoolExhaustedError, String(err));
      assert.match(
        err.message,
        new RegExp(
          `address pool ${NETWORK} ${range} has no free address for machine race-pool5-abc12-\\d\\d: 10 addresses, held by 192\\.168\\.100\\.100 \\(race-pool5`,
        ),
      );
    }
    const addresses = created.map((m) => m.driver.config.IPAddress);
    assert.equal(new Set(addresses).size, 10, `no address twice: ${addresses.join(', ')}`);
    assert.equal((await claims()).length, 10);
    const vms = (await admin.list(Resources.virtualMachine, { namespace: ns })).items.filter((v) =>
      v.metadata.name?.startsWith('race-pool5'),
    );
    assert.equal(vms.length, 10, 'a refused machine has no VM');
    console.log(`20 creates against 10 addresses: 10 created, 10 refused in ${seconds.toFixed(1)} s`);
    await Promise.all(created.map((m) => m.driver.remove()));
    assert.deepEqual(await claims(), []);
  });

  it('takes the address from Harvester’s IP pool where the network has one (vm-dhcp-controller), freed with the VM', async () => {
    const { admin } = fixture.sandbox.harvester;
    await admin.create(Resources.networkAttachmentDefinition, vlanNetwork(ns, 'vlan48', 48));
    await admin.create(VmDhcpTypes.ipPool, {
      apiVersion: 'network.harvesterhci.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: 'vlan48', namespace: ns },
      spec: {
        networkName: `${ns}/vlan48`,
        ipv4Config: {
          serverIP: '192.168.48.2',
          cidr: '192.168.48.0/24',
          router: '192.168.48.1',
          dns: ['192.168.48.1'],
          pool: { start: '192.168.48.10', end: '192.168.48.11' },
        },
      },
    } as KubeObject);
    await eventually('the network to be labelled for its pool', async () =>
      Boolean(
        (await admin.get(Resources.networkAttachmentDefinition, { namespace: ns, name: 'vlan48' })).metadata
          .labels?.['network.harvesterhci.io/ippool-name'],
      ),
    );
    const info = JSON.stringify({ network: `${ns}/vlan48` });
    const a = machine('dhcp-pool6-abc12-a', {
      'harvester-network-name': `${ns}/vlan48`,
      'harvester-ip-pool-info': info,
    });
    await a.driver.preCreateCheck();
    await a.driver.create();
    const address = a.driver.config.IPAddress;
    assert.match(address, /^192\.168\.48\.1[01]$/);
    assert.deepEqual(a.driver.config.HarvesterMachine.FixedAddress?.source, 'harvester-ippool');
    assert.equal(await a.driver.getIP(), address);
    assert.equal(await guestAddress('dhcp-pool6-abc12-a'), address, 'Harvester’s DHCP serves it');
    const ipPool = await admin.get<
      KubeObject & { status?: { ipv4?: { allocated?: Record<string, string> } } }
    >(VmDhcpTypes.ipPool, { namespace: ns, name: 'vlan48' });
    const vm = await admin.get<Vm>(Resources.virtualMachine, { namespace: ns, name: 'dhcp-pool6-abc12-a' });
    assert.equal(
      ipPool.status?.ipv4?.allocated?.[address],
      vm.spec.template.spec?.domain.devices.interfaces?.[0]?.macAddress,
    );
    assert.deepEqual(await claims(), [], 'no claim of the driver: the pool is Harvester’s');

    // .11 is taken by another: the pool is full now.
    const other = machine('dhcp-pool6-abc12-b', {
      'harvester-network-name': `${ns}/vlan48`,
      'harvester-ip-pool-info': info,
    });
    await other.driver.create();
    const third = machine('dhcp-pool6-abc12-c', {
      'harvester-network-name': `${ns}/vlan48`,
      'harvester-ip-pool-info': info,
    });
    await assert.rejects(
      third.driver.preCreateCheck(),
      /Harvester's IP pool default\/vlan48 \(192\.168\.48\.10-192\.168\.48\.11 of 192\.168\.48\.0\/24\) has no free address: held by 192\.168\.48\.1[01] \(VM default\/dhcp-pool6-abc12-[ab]\)/,
    );
    // A pool described in the flag must not fight Harvester's.
    const fighting = machine('dhcp-pool6-abc12-d', {
      'harvester-network-name': `${ns}/vlan48`,
      'harvester-ip-pool-info': JSON.stringify({
        network: `${ns}/vlan48`,
        range: '192.168.48.20-192.168.48.29',
        prefix: 24,
        gateway: '192.168.48.1',
        dns: ['192.168.48.1'],
      }),
    });
    await assert.rejects(
      fighting.driver.preCreateCheck(),
      /is served by Harvester's IP pool default\/vlan48 .* leave "range" and "cidr" out/,
    );

    const bare = machine('dhcp-pool6-abc12-e', {
      'harvester-network-name': 'vlan48',
      'harvester-ip-pool-info': info,
    });
    await assert.rejects(
      bare.driver.preCreateCheck(),
      /give the machine's network as default\/vlan48 \(with its namespace\)/,
    );

    await Promise.all([a.driver.remove(), other.driver.remove()]);
    await eventually('the pool’s addresses to be free', async () => {
      const p = await admin.get<KubeObject & { status?: { ipv4?: { used?: number } } }>(VmDhcpTypes.ipPool, {
        namespace: ns,
        name: 'vlan48',
      });
      return p.status?.ipv4?.used === 0;
    });
  });

  it('puts the pool’s labels and annotations on the VM, its instance and its virt-launcher pod, and refuses the driver’s own keys', async () => {
    const { admin } = fixture.sandbox.harvester;
    const name = 'labels-pool7-abc12-a';
    const m = machine(name, {
      'harvester-network-name': `${ns}/vlan1`,
      'harvester-vm-labels': 'app=web,example.com/tier=front',
      'harvester-vm-annotations': '{"example.com/owner":"team a, b"}',
    });
    await m.driver.create();
    const vm = await admin.get<Vm>(Resources.virtualMachine, { namespace: ns, name });
    assert.equal(vm.metadata.labels?.['app'], 'web');
    assert.equal(vm.metadata.annotations?.['example.com/owner'], 'team a, b');
    const instance = await vmi(name);
    assert.equal(instance.metadata.labels?.['example.com/tier'], 'front');
    assert.equal(instance.metadata.annotations?.['example.com/owner'], 'team a, b');
    const pods = await admin.list<Pod>(ExtraResources.pod, {
      namespace: ns,
      labelSelector: 'app=web,example.com/tier=front',
    });
    assert.deepEqual(
      pods.items.map((p) => p.metadata.labels?.['vm.kubevirt.io/name']),
      [name],
      'a selector on the labels finds the pod',
    );
    await m.driver.remove();

    assert.throws(
      () =>
        machine('labels-pool7-abc12-b', {
          'harvester-network-name': `${ns}/vlan1`,
          'harvester-vm-labels': 'guestcluster.harvesterhci.io/name=other',
        }),
      /--harvester-vm-labels: label key "guestcluster\.harvesterhci\.io\/name" is owned by Harvester and the driver/,
    );
    assert.throws(
      () =>
        machine('labels-pool7-abc12-c', {
          'harvester-network-name': `${ns}/vlan1`,
          'harvester-vm-annotations': 'v1.multus-cni.io/default-network=default/vlan100',
        }),
      /--harvester-vm-annotations: annotation key "v1\.multus-cni\.io\/default-network" is owned by Multus/,
    );
  });

  it('refuses a claim planted for the machine outside its pool or with a multicast MAC before anything is made, and never uses or deletes a replaced one', async () => {
    const { admin } = fixture.sandbox.harvester;
    const name = 'fixed-pool11-abc12-a';
    const info = pool('192.168.100.170-192.168.100.171');
    type Cm = KubeObject & { data?: Record<string, string> };
    const plant = (address: string, mac: string): Promise<Cm> =>
      admin.create<Cm>(
        Resources.configMap,
        claimObject(ns, name, { address, network: NETWORK, mac, interface: 'nic-0' }),
      );
    const noVm = async (): Promise<void> =>
      assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name }), undefined, 'no VM');

    // The gateway, and an address of another subnet: refused by PreCreateCheck and by Create.
    for (const address of [SEED_STATIC_SUBNET.gateway, '10.99.0.5']) {
      const cm = await plant(address, '02:00:00:00:00:aa');
      const m = machine(name, { 'harvester-ip-pool-info': info });
      const named = `address claim ConfigMap ${ns}/${cm.metadata.name}: its "address" ${address} is outside the pool's`;
      await assert.rejects(m.driver.preCreateCheck(), (err: Error) => err.message.includes(named));
      await assert.rejects(
        m.driver.create(),
        (err: Error) => err instanceof AddressClaimRefusedError && err.message.includes(named),
      );
      await noVm();
      assert.deepEqual(
        (await claims()).map((c) => c.metadata.name),
        [cm.metadata.name],
        'no claim made, the planted one left alone',
      );
      await admin.delete(Resources.configMap, { namespace: ns, name: cm.metadata.name });
    }
    const multicast = await plant('192.168.100.170', '01:00:5e:00:00:01');
    await assert.rejects(
      machine(name, { 'harvester-ip-pool-info': info }).driver.create(),
      (err: Error) =>
        err instanceof AddressClaimRefusedError &&
        err.message.includes(
          `address claim ConfigMap ${ns}/${multicast.metadata.name}: its "mac" "01:00:5e:00:00:01" is a multicast address`,
        ),
    );
    await noVm();
    await admin.delete(Resources.configMap, { namespace: ns, name: multicast.metadata.name });

    // The machine's own claim, bound by uid in its saved state and on its VM.
    const m = machine(name, { 'harvester-ip-pool-info': info });
    await m.driver.create();
    const own = claimName(NETWORK, m.driver.config.IPAddress);
    const ownCm = await admin.get<Cm>(Resources.configMap, { namespace: ns, name: own });
    assert.equal(m.driver.config.HarvesterMachine.FixedAddress?.claimUid, ownCm.metadata.uid);
    assert.match(
      Buffer.from(m.driver.getConfigRaw()).toString(),
      new RegExp(`"claimUid": ?"${ownCm.metadata.uid}"`),
      'in the saved config.json, under HarvesterMachine',
    );
    // Replaced by someone else: same name, another uid, unowned, another MAC.
    await admin.delete(Resources.configMap, { namespace: ns, name: own });
    await eventually('the claim to go', async () => !(await claims()).some((c) => c.metadata.name === own));
    const replaced = await plant(m.driver.config.IPAddress, '02:00:00:00:00:bb');
    const again = machine(name, { 'harvester-ip-pool-info': info });
    await assert.rejects(
      again.driver.create(),
      (err: Error) =>
        err instanceof AddressClaimRefusedError &&
        err.message.includes(`address claim ConfigMap ${ns}/${own} is not the claim this machine made`),
    );
    const still = await admin.get<Cm>(Resources.configMap, { namespace: ns, name: own });
    assert.equal(still.metadata.uid, replaced.metadata.uid);
    assert.equal(still.metadata.ownerReferences, undefined, 'never adopted');
    await m.driver.remove();
    assert.equal(
      (await admin.get<Cm>(Resources.configMap, { namespace: ns, name: own })).metadata.uid,
      replaced.metadata.uid,
      'Remove deletes only the claim with the recorded uid',
    );
    await admin.delete(Resources.configMap, { namespace: ns, name: own });
  });
});
