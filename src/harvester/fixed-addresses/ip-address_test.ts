import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newGoDriverConfig } from '../config/go-config.js';
import { interfaceNameForNetwork, pickNodeAddresses } from './ip-address.js';
import { vmiWith } from '../testing/fixtures.js';
import type { VMINetworkInterfaceStatus } from '../types.js';

const vmi = (interfaces?: VMINetworkInterfaceStatus[]) =>
  vmiWith('m1', 'default', interfaces ? { phase: 'Running', interfaces } : { phase: 'Running' });

describe('pickNodeAddresses', () => {
  it('says "nothing yet" for a missing VMI, a missing or empty list, or only unusable addresses', () => {
    assert.equal(pickNodeAddresses(undefined), undefined);
    assert.equal(pickNodeAddresses(vmi()), undefined);
    assert.equal(pickNodeAddresses(vmi([])), undefined);
    assert.equal(pickNodeAddresses(vmi([{ name: 'nic-0' }])), undefined);
    assert.equal(
      pickNodeAddresses(
        vmi([
          { name: 'nic-0', ipAddress: 'fe80::1/64', ipAddresses: ['169.254.0.3', '127.0.0.1', 'garbage'] },
        ]),
      ),
      undefined,
    );
  });

  it('takes IPv4 and IPv6 from the first interface with an address, prefix cut off', () => {
    const picked = pickNodeAddresses(
      vmi([
        { name: 'nic-0', ipAddress: '', ipAddresses: [] },
        {
          name: 'nic-1',
          ipAddress: '10.0.0.5/24',
          ipAddresses: ['10.0.0.5/24', 'fe80::5054:ff:fe12:3456/64', '2001:db8::5/64'],
        },
      ]),
    );
    assert.deepEqual(picked, {
      addresses: ['10.0.0.5', '2001:db8::5'],
      ipv4: '10.0.0.5',
      ipv6: '2001:db8::5',
      interfaceName: 'nic-1',
    });
  });

  it('reports an IPv6-only machine (harvester#7520) instead of failing', () => {
    const picked = pickNodeAddresses(
      vmi([{ name: 'nic-0', ipAddress: '2001:db8::7', ipAddresses: ['2001:db8::7'] }]),
    );
    assert.deepEqual(picked, { addresses: ['2001:db8::7'], ipv6: '2001:db8::7', interfaceName: 'nic-0' });
  });

  it('prefers the VM’s own NICs over interfaces only the guest agent sees', () => {
    const picked = pickNodeAddresses(
      vmi([
        { ipAddress: '10.42.0.1', interfaceName: 'cni0', infoSource: 'guest-agent' },
        { name: 'nic-0', ipAddress: '192.168.1.20', interfaceName: 'eth0' },
      ]),
    );
    assert.equal(picked?.ipv4, '192.168.1.20');
    const onlyGuest = pickNodeAddresses(
      vmi([{ ipAddress: '10.1.1.1', interfaceName: 'eth0', infoSource: 'guest-agent' }]),
    );
    assert.equal(onlyGuest?.ipv4, '10.1.1.1');
    assert.equal(onlyGuest?.interfaceName, undefined);
  });

  it('uses only the chosen network’s interface when one is configured (no fallback)', () => {
    const interfaces = [
      { name: 'nic-0', ipAddress: '10.0.0.5' },
      { name: 'nic-1', ipAddress: '192.168.100.7/24' },
    ];
    assert.equal(pickNodeAddresses(vmi(interfaces), 'nic-1')?.ipv4, '192.168.100.7');
    assert.equal(pickNodeAddresses(vmi([{ name: 'nic-0', ipAddress: '10.0.0.5' }]), 'nic-1'), undefined);
  });
});

describe('interfaceNameForNetwork', () => {
  const multiNic = {
    ...newGoDriverConfig('m1'),
    VMNamespace: 'default',
    NetworkInfo: {
      interfaces: [
        { networkName: 'default/mgmt-vlan', macAddress: '', model: '', type: '' },
        { networkName: 'storage', macAddress: '', model: '', type: '' },
      ],
    },
  };

  it('matches a network name with or without the VM namespace, or a nic name', () => {
    assert.equal(interfaceNameForNetwork(multiNic, 'default/mgmt-vlan'), 'nic-0');
    assert.equal(interfaceNameForNetwork(multiNic, 'mgmt-vlan'), 'nic-0');
    assert.equal(interfaceNameForNetwork(multiNic, 'default/storage'), 'nic-1');
    assert.equal(interfaceNameForNetwork(multiNic, 'nic-1'), 'nic-1');
    assert.equal(interfaceNameForNetwork(multiNic, 'nic-2'), undefined);
    assert.equal(interfaceNameForNetwork(multiNic, 'other/storage'), undefined);
  });

  it('legacy single network is nic-0', () => {
    const legacy = { ...newGoDriverConfig('m1'), VMNamespace: 'ns1', NetworkName: 'vlan1' };
    assert.equal(interfaceNameForNetwork(legacy, 'ns1/vlan1'), 'nic-0');
    assert.equal(interfaceNameForNetwork(legacy, 'vlan2'), undefined);
  });
});
