// The guest's addresses from its interfaces, its cloud-init network data and its networks'
// servers (guest-addresses.ts): cloud-init's matching and fallback, as cloud-init documents them,
// and where the network data is found.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VirtualMachineInstance, Volume } from '../types.js';
import {
  guestAddresses,
  networkDataOfSecret,
  networkDataSource,
  type NetworkServers,
} from './guest-addresses.js';

const NICS = [
  { name: 'nic-0', mac: '02:00:00:00:00:01' },
  { name: 'nic-1', mac: '02:00:00:00:00:02' },
];
/** A DHCP server and a router on every network: what each NIC would get. */
const everywhere: NetworkServers = { lease: (i) => `172.20.0.${10 + i}`, slaac: (i) => `fd20::${i + 1}` };
const nowhere: NetworkServers = { lease: () => undefined, slaac: () => undefined };

describe('guest network', () => {
  it('without network data: DHCP on the first NIC only (cloud-init’s fallback), SLAAC wherever a router is', () => {
    assert.deepEqual(guestAddresses(NICS, undefined, everywhere), [
      { interfaceName: 'eth0', ipv4: '172.20.0.10', ipv6: 'fd20::1', awaitingLease: false },
      { interfaceName: 'eth1', ipv6: 'fd20::2', awaitingLease: false },
    ]);
  });

  it('on a network without DHCP: nothing but what the network data sets', () => {
    assert.deepEqual(guestAddresses(NICS.slice(0, 1), '', nowhere), [
      { interfaceName: 'eth0', awaitingLease: true },
    ]);
    const v1 =
      'version: 1\nconfig:\n  - type: physical\n    name: eth0\n    mac_address: "02:00:00:00:00:01"\n    subnets:\n      - {type: static, address: 192.168.100.10/24, gateway: 192.168.100.1}\n';
    assert.deepEqual(guestAddresses(NICS.slice(0, 1), v1, nowhere), [
      { interfaceName: 'eth0', ipv4: '192.168.100.10', awaitingLease: false },
    ]);
  });

  it('matches v1 entries by MAC (then renamed) or by name, and leaves unnamed NICs unconfigured', () => {
    const v1 =
      'network:\n  version: 1\n  config:\n    - {type: physical, name: uplink, mac_address: "02:00:00:00:00:02", subnets: [{type: static, address: 10.0.0.5/24}]}\n    - {type: nameserver, address: [10.0.0.1]}\n';
    assert.deepEqual(guestAddresses(NICS, v1, everywhere), [
      { interfaceName: 'eth0', ipv6: 'fd20::1', awaitingLease: false },
      { interfaceName: 'uplink', ipv4: '10.0.0.5', ipv6: 'fd20::2', awaitingLease: false },
    ]);
  });

  it('reads v2 ethernets, matched by MAC or by their id, with DHCP or addresses', () => {
    const v2 =
      'version: 2\nethernets:\n  eth0: {dhcp4: true}\n  pool: {match: {macaddress: "02:00:00:00:00:02"}, set-name: eth1, addresses: [192.168.100.11/24]}\n';
    assert.deepEqual(guestAddresses(NICS, v2, everywhere), [
      { interfaceName: 'eth0', ipv4: '172.20.0.10', ipv6: 'fd20::1', awaitingLease: false },
      { interfaceName: 'eth1', ipv4: '192.168.100.11', ipv6: 'fd20::2', awaitingLease: false },
    ]);
  });

  it('asks for a lease only where DHCP runs, and waits while none comes', () => {
    const asked: number[] = [];
    const servers: NetworkServers = {
      lease: (i) => {
        asked.push(i);
        return undefined;
      },
      slaac: () => undefined,
    };
    const v1 = 'version: 1\nconfig:\n  - {type: physical, name: eth1, subnets: [{type: dhcp}]}\n';
    const result = guestAddresses(NICS, v1, servers);
    assert.deepEqual(asked, [1]);
    assert.equal(result[1]?.awaitingLease, true);
    assert.equal(result[0]?.awaitingLease, false);
  });

  it('falls back as cloud-init does on data it cannot read', () => {
    assert.equal(guestAddresses(NICS, 'version: [', everywhere)[0]?.ipv4, '172.20.0.10');
  });
});

describe('network data', () => {
  const withVolume = (volume: Volume): VirtualMachineInstance => ({
    metadata: { name: 'vm', namespace: 'ns' },
    spec: {
      domain: { devices: {} },
      volumes: [{ name: 'rootdisk', persistentVolumeClaim: { claimName: 'd' } }, volume],
    },
  });

  it('is found inline, base64-encoded or in a Secret, in a NoCloud or ConfigDrive volume', () => {
    const noCloud = (source: Volume['cloudInitNoCloud']) =>
      withVolume({ name: 'cloudinitdisk', cloudInitNoCloud: source });
    assert.deepEqual(networkDataSource(noCloud({ networkData: 'version: 2' })), { inline: 'version: 2' });
    assert.deepEqual(
      networkDataSource(noCloud({ networkDataBase64: Buffer.from('version: 1').toString('base64') })),
      { inline: 'version: 1' },
    );
    assert.deepEqual(networkDataSource(noCloud({ networkDataSecretRef: { name: 'vm-cloudinit' } })), {
      secret: 'vm-cloudinit',
    });
    assert.deepEqual(
      networkDataSource(withVolume({ name: 'cd', cloudInitConfigDrive: { networkData: 'version: 1' } })),
      { inline: 'version: 1' },
    );
    assert.equal(networkDataSource(noCloud({ userData: '#cloud-config' })), undefined);
  });

  it("is read from the Secret's networkdata key, or networkData", () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    assert.equal(networkDataOfSecret({ networkdata: b64('version: 2') }), 'version: 2');
    assert.equal(networkDataOfSecret({ networkData: b64('version: 1') }), 'version: 1');
    assert.equal(networkDataOfSecret({ userdata: b64('#cloud-config') }), undefined);
    assert.equal(networkDataOfSecret(undefined), undefined);
  });
});
