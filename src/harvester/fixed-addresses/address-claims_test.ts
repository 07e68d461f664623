import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  claimObject,
  claimProblems,
  describeHolders,
  firstFree,
  fixedAddressAnnotation,
  fixedAddressOfVm,
  isAbandoned,
  leftoverClaims,
  parseFixedAddress,
  readClaim,
  ANNOTATION_FIXED_ADDRESS,
  UNOWNED_CLAIM_GRACE_MS,
  type FixedAddress,
} from './address-claims.js';
import { emptyIpPoolInfo, type IpPoolInfo } from './ip-pool.js';
import {
  allocationOf,
  describeIpPool,
  ipPoolOfNetwork,
  ipPoolUsage,
  type VmNetworkConfig,
} from './vm-dhcp.js';

const fixed: FixedAddress = {
  address: '192.168.100.10',
  prefix: 24,
  interface: 'nic-0',
  mac: '02:00:00:00:00:01',
  network: 'default/vlan100',
  source: 'pool',
  holder: 'hm-ip-x',
};

describe('address claims', () => {
  it('are one ConfigMap per network and address, labelled for their network and machine, read back', () => {
    const cm = claimObject('tenant', 'pool1-abc-xyz', fixed);
    assert.match(cm.metadata.name, /^hm-ip-[0-9a-f]{10}-192-168-100-10$/);
    assert.equal(cm.metadata.namespace, 'tenant');
    const read = readClaim({
      ...cm,
      metadata: {
        ...cm.metadata,
        uid: 'u1',
        resourceVersion: '7',
        creationTimestamp: '2026-01-01T00:00:00Z',
        ownerReferences: [
          { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: 'pool1-abc-xyz', uid: 'vm1' },
        ],
      },
    });
    assert.deepEqual(read, {
      name: cm.metadata.name,
      namespace: 'tenant',
      uid: 'u1',
      resourceVersion: '7',
      created: Date.parse('2026-01-01T00:00:00Z'),
      network: 'default/vlan100',
      address: '192.168.100.10',
      machine: 'pool1-abc-xyz',
      mac: fixed.mac,
      interface: 'nic-0',
      owner: { name: 'pool1-abc-xyz', uid: 'vm1' },
    });
  });

  it('ignore a ConfigMap whose name is not its address’s claim (no one can claim by naming another)', () => {
    const cm = claimObject('tenant', 'm', fixed);
    assert.equal(readClaim({ ...cm, metadata: { ...cm.metadata, name: 'other' } }), undefined);
    assert.equal(readClaim({ ...cm, data: { ...cm.data, address: '192.168.100.11' } }), undefined);
  });

  it('are taken over only when never adopted, past the grace, and without their machine’s VM', () => {
    const claim = readClaim({
      ...claimObject('ns', 'm', fixed),
      metadata: { ...claimObject('ns', 'm', fixed).metadata, creationTimestamp: new Date(0).toISOString() },
    });
    assert.ok(claim);
    assert.equal(isAbandoned(claim, UNOWNED_CLAIM_GRACE_MS, false), true);
    assert.equal(isAbandoned(claim, UNOWNED_CLAIM_GRACE_MS - 1, false), false, 'within the grace');
    assert.equal(isAbandoned(claim, UNOWNED_CLAIM_GRACE_MS, true), false, 'its VM exists');
    assert.equal(
      isAbandoned({ ...claim, owner: { name: 'm', uid: 'u' } }, Date.now(), false),
      false,
      'owned',
    );
  });

  it('pick the first address no claim holds, and say who holds them', () => {
    const held = new Set(['10.0.0.1', '10.0.0.2']);
    assert.equal(firstFree(['10.0.0.1', '10.0.0.2', '10.0.0.3'], held), 2);
    assert.equal(firstFree(['10.0.0.1'], held), -1);
    assert.equal(
      describeHolders([
        { address: '10.0.0.1', machine: 'a' },
        { address: '10.0.0.2', machine: 'b', owner: { name: 'b', uid: 'u' } },
      ]),
      '10.0.0.1 (a, not yet adopted by a VM), 10.0.0.2 (b)',
    );
    assert.match(
      describeHolders(
        Array.from({ length: 9 }, (_, i) => ({
          address: `10.0.0.${i}`,
          machine: 'm',
          owner: { name: 'm', uid: 'u' },
        })),
      ),
      /and 3 more$/,
    );
  });

  it('record the fixed address on the VM as stable JSON, and read it back', () => {
    const annotations = { [ANNOTATION_FIXED_ADDRESS]: fixedAddressAnnotation(fixed) };
    assert.deepEqual(fixedAddressOfVm(annotations), fixed);
    assert.equal(fixedAddressOfVm({ [ANNOTATION_FIXED_ADDRESS]: '{"address":1}' }), undefined);
    assert.equal(fixedAddressOfVm({ [ANNOTATION_FIXED_ADDRESS]: '{' }), undefined);
  });

  it('record the uid of the claim with the address, and read what earlier releases recorded without it', () => {
    const bound = { ...fixed, claimUid: 'u-1' };
    const text = fixedAddressAnnotation(bound);
    assert.equal(text, `${fixedAddressAnnotation(fixed).slice(0, -1)},"claimUid":"u-1"}`, 'the uid last');
    assert.deepEqual(parseFixedAddress(text), bound);
    assert.deepEqual(parseFixedAddress(fixedAddressAnnotation(fixed)), fixed, 'no uid: none read');
    assert.deepEqual(parseFixedAddress(text.replace('"u-1"', '7')), fixed, 'a uid that is no string is none');
  });

  it('are used only with an address the pool hands out and a unicast MAC, else refused naming the claim and field', () => {
    const pool: IpPoolInfo = {
      ...emptyIpPoolInfo(),
      network: 'default/vlan100',
      range: '192.168.100.10-192.168.100.19',
      prefix: 24,
      gateway: '192.168.100.1',
      dns: ['192.168.100.1'],
    };
    const claimFor = (address: string, mac: string) => {
      const cm = claimObject('tenant', 'm1', { ...fixed, address, mac });
      const read = readClaim({ ...cm, metadata: { ...cm.metadata, uid: 'u' } });
      assert.ok(read);
      return read;
    };
    assert.deepEqual(claimProblems(claimFor('192.168.100.10', '02:00:00:00:00:01'), pool), []);
    const gateway = claimFor('192.168.100.1', '02:00:00:00:00:01');
    assert.deepEqual(claimProblems(gateway, pool), [
      `address claim ConfigMap tenant/${gateway.name}: its "address" 192.168.100.1 is outside the pool's range 192.168.100.10-192.168.100.19`,
    ]);
    const other = claimFor('10.9.9.9', '01:00:5e:00:00:01');
    assert.deepEqual(claimProblems(other, pool), [
      `address claim ConfigMap tenant/${other.name}: its "address" 10.9.9.9 is outside the pool's subnet 192.168.100.0/24`,
      `address claim ConfigMap tenant/${other.name}: its "mac" "01:00:5e:00:00:01" is a multicast address (the first octet's lowest bit is set); an interface needs a unicast one`,
    ]);
    assert.match(claimProblems(claimFor('192.168.100.11', ''), pool).join(), /"mac" "" is not a MAC address/);
    assert.match(
      claimProblems(claimFor('192.168.100.12', '00:00:00:00:00:00'), pool).join(),
      /"mac" "00:00:00:00:00:00" is all zeros/,
    );
  });
});

describe('Harvester IP pools (vm-dhcp-controller)', () => {
  it('find a network’s pool by its labels', () => {
    assert.deepEqual(
      ipPoolOfNetwork({
        'network.harvesterhci.io/ippool-namespace': 'default',
        'network.harvesterhci.io/ippool-name': 'net-48',
      }),
      { namespace: 'default', name: 'net-48' },
    );
    assert.equal(ipPoolOfNetwork({ 'network.harvesterhci.io/ippool-name': 'net-48' }), undefined);
  });

  it('read a MAC’s binding, a refusal that waiting will not change, or a pending state', () => {
    const mac = 'FA:CF:8E:50:82:FC';
    const bound: VmNetworkConfig = {
      metadata: {},
      status: {
        networkConfigs: [
          { macAddress: mac.toLowerCase(), allocatedIPAddress: '192.168.48.86', state: 'Allocated' },
        ],
      },
    };
    assert.deepEqual(allocationOf(bound, mac), { address: '192.168.48.86' });
    const full: VmNetworkConfig = {
      metadata: {},
      status: {
        conditions: [
          {
            type: 'Allocated',
            status: 'False',
            reason: 'Error',
            message: 'no more ip addresses left in network default/net-48 ipam',
          },
        ],
      },
    };
    assert.deepEqual(allocationOf(full, mac), {
      refused: 'no more ip addresses left in network default/net-48 ipam',
    });
    const notReady: VmNetworkConfig = {
      metadata: {},
      status: {
        conditions: [{ type: 'Allocated', status: 'False', message: 'ippool default/net-48 is not ready' }],
      },
    };
    assert.deepEqual(allocationOf(notReady, mac), { waiting: 'ippool default/net-48 is not ready' });
    assert.equal(allocationOf({ metadata: {} }, mac), undefined);
    assert.equal(allocationOf(undefined, mac), undefined);
  });

  it('count what a pool’s status books, the excluded and reserved marks left out', () => {
    const pool = {
      metadata: { namespace: 'default', name: 'net-48' },
      spec: {
        ipv4Config: { cidr: '192.168.48.0/24', pool: { start: '192.168.48.81', end: '192.168.48.90' } },
      },
      status: {
        ipv4: {
          allocated: {
            '192.168.48.81': 'EXCLUDED',
            '192.168.48.77': 'RESERVED',
            '192.168.48.86': 'c6:d6:82:39:d3:c3',
          },
          used: 1,
          available: 0,
        },
      },
    };
    assert.deepEqual(ipPoolUsage(pool), {
      held: [{ address: '192.168.48.86', mac: 'c6:d6:82:39:d3:c3' }],
      available: 0,
    });
    assert.equal(describeIpPool(pool), 'default/net-48 (192.168.48.81-192.168.48.90 of 192.168.48.0/24)');
  });
});

describe('leftover claims', () => {
  const claimOf = (machine: string, address: string, owner?: { name: string; uid: string }) => {
    const cm = claimObject('ns', machine, { ...fixed, address });
    const read = readClaim({
      ...cm,
      metadata: {
        ...cm.metadata,
        uid: `u-${address}`,
        creationTimestamp: new Date(0).toISOString(),
        ...(owner
          ? { ownerReferences: [{ apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', ...owner }] }
          : {}),
      },
    });
    assert.ok(read);
    return read;
  };

  const vmOf = (name: string, address?: string) => ({
    metadata: {
      namespace: 'ns',
      name,
      uid: `vm-${name}`,
      ...(address
        ? {
            annotations: {
              [ANNOTATION_FIXED_ADDRESS]: fixedAddressAnnotation({
                ...fixed,
                address,
                holder: `c-${address}`,
              }),
            },
          }
        : {}),
    },
  });

  it('lists claims whose VM is gone and unadopted ones of machines without a VM, never a live VM’s', () => {
    const vms = [vmOf('live', '10.0.0.1'), vmOf('adopting', '10.0.0.3')];
    const claims = [
      claimOf('live', '10.0.0.1', { name: 'live', uid: 'vm-live' }),
      claimOf('gone', '10.0.0.2', { name: 'gone', uid: 'vm-gone' }),
      claimOf('adopting', '10.0.0.3'), // unowned, but its machine's VM records it: a create adopting it
      claimOf('crashed', '10.0.0.4'),
      claimOf('live', '10.0.0.5', { name: 'live', uid: 'vm-old-live' }), // a VM of the same name, recreated
    ];
    const left = leftoverClaims(claims, vms, Date.now(), 60_000);
    assert.deepEqual(
      left.map((l) => [l.address, l.reason]),
      [
        ['10.0.0.2', 'its VM ns/gone is gone'],
        ['10.0.0.4', 'never adopted, and machine crashed has no VM'],
        ['10.0.0.5', 'its VM ns/live is gone'],
      ],
    );
    assert.deepEqual(leftoverClaims(claims, vms, 1_000, 60_000), [], 'younger than the minimum age');
  });

  it('lists claims naming a live VM’s machine whose address no VM has (planted ones, which are never taken over)', () => {
    const vms = [vmOf('live', '10.0.0.1'), vmOf('plain')];
    const claims = [
      claimOf('live', '10.0.0.1', { name: 'live', uid: 'vm-live' }),
      claimOf('live', '10.0.0.6'), // planted: names the live machine, unowned
      claimOf('live', '10.0.0.7', { name: 'live', uid: 'vm-live' }), // planted with the VM as owner
      claimOf('plain', '10.0.0.8', { name: 'plain', uid: 'vm-plain' }), // owned by a VM that records nothing
      claimOf('plain', '10.0.0.9'), // unowned, naming a VM that records nothing
    ];
    assert.deepEqual(
      leftoverClaims(claims, vms, Date.now(), 60_000).map((l) => [l.address, l.reason]),
      [
        ['10.0.0.6', 'no VM has this address: VM ns/live has 10.0.0.1'],
        ['10.0.0.7', 'no VM has this address: VM ns/live has 10.0.0.1'],
        ['10.0.0.9', 'no VM has this address: VM ns/plain of machine plain has no fixed address'],
      ],
    );
    const otherNetwork = vmOf('live');
    otherNetwork.metadata.annotations = {
      [ANNOTATION_FIXED_ADDRESS]: fixedAddressAnnotation({
        ...fixed,
        address: '10.0.0.6',
        network: 'ns/other',
      }),
    };
    assert.deepEqual(
      leftoverClaims([claimOf('live', '10.0.0.6')], [otherNetwork], Date.now(), 0).map((l) => l.address),
      ['10.0.0.6'],
      'the same address on another network is not this claim’s',
    );
  });
});
