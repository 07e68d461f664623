import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { fixedNetworkData, type FixedNetworkRequest } from './fixed-network-data.js';
import { networkDataProblems } from '../cloud-init/network-data.js';

const MAC = '02:aa:bb:cc:dd:01';
const staticNic = (over: Partial<FixedNetworkRequest> = {}): FixedNetworkRequest => ({
  nic: { index: 0, mac: MAC },
  config: {
    kind: 'static',
    address: '192.168.100.10',
    prefix: 24,
    gateway: '192.168.100.1',
    dns: ['192.168.100.1'],
  },
  interfaceCount: 1,
  ...over,
});
const textOf = (r: ReturnType<typeof fixedNetworkData>): string => {
  assert.ok('text' in r, `expected network data, got ${r.problems.join('; ')}`);
  return r.text;
};

describe('fixed network data', () => {
  it('without the operator’s: one v1 entry naming the NIC by its MAC, which passes the Go driver’s checks', () => {
    const text = textOf(fixedNetworkData('', staticNic()));
    assert.deepEqual(parse(text), {
      version: 1,
      config: [
        {
          type: 'physical',
          name: 'eth0',
          mac_address: MAC,
          subnets: [
            {
              type: 'static',
              address: '192.168.100.10/24',
              gateway: '192.168.100.1',
              dns_nameservers: ['192.168.100.1'],
            },
          ],
        },
      ],
    });
    assert.deepEqual(networkDataProblems(text), []);
  });

  it('keeps DHCP on the first NIC (cloud-init’s fallback) when the pool’s is another one', () => {
    const req = staticNic({
      nic: { index: 1, mac: MAC },
      firstNicMac: '02:00:00:00:00:09',
      interfaceCount: 2,
      config: { kind: 'static', address: '10.0.0.5', prefix: 24, gateway: '', dns: [] },
    });
    const config = (
      parse(textOf(fixedNetworkData('', req))) as {
        config: Array<{ name: string; mac_address: string; subnets: Array<{ type: string }> }>;
      }
    ).config;
    assert.deepEqual(
      config.map((e) => [e.name, e.mac_address, e.subnets[0]?.type]),
      [
        ['eth0', '02:00:00:00:00:09', 'dhcp'],
        ['eth1', MAC, 'static'],
      ],
    );
  });

  it('DHCP for a NIC a Harvester IP pool serves', () => {
    const data = parse(textOf(fixedNetworkData('', staticNic({ config: { kind: 'dhcp' } })))) as {
      config: Array<{ subnets: unknown[] }>;
    };
    assert.deepEqual(data.config[0]?.subnets, [{ type: 'dhcp' }]);
  });

  it('adds its entry to the operator’s v1 data, keeping the rest as written', () => {
    const user =
      'network:\n  version: 1\n  config:\n    - type: physical\n      name: enp1s0\n      subnets:\n        - type: dhcp\n    - type: nameserver\n      address: [1.1.1.1]\n      search: [example.com] # ours\n';
    const req = staticNic({
      nic: { index: 1, mac: MAC },
      interfaceCount: 2,
      config: { kind: 'static', address: '10.0.0.5', prefix: 24, gateway: '', dns: [] },
    });
    const text = textOf(fixedNetworkData(user, req));
    assert.ok(text.includes('# ours'), 'comments kept');
    const config = (parse(text) as { network: { config: Array<Record<string, unknown>> } }).network.config;
    assert.equal(config.length, 3);
    assert.deepEqual(config[2], {
      type: 'physical',
      name: 'eth1',
      mac_address: MAC,
      subnets: [{ type: 'static', address: '10.0.0.5/24' }],
    });
    assert.deepEqual(networkDataProblems(text), []);
  });

  it('adds a matched ethernet to the operator’s v2 data', () => {
    const user = 'version: 2\nethernets:\n  enp1s0:\n    dhcp4: true\n';
    const text = textOf(
      fixedNetworkData(
        user,
        staticNic({
          nic: { index: 1, mac: MAC },
          interfaceCount: 2,
          config: { kind: 'static', address: '10.0.0.5', prefix: 24, gateway: '', dns: ['10.0.0.1'] },
        }),
      ),
    );
    assert.deepEqual((parse(text) as { ethernets: Record<string, unknown> }).ethernets['eth1'], {
      match: { macaddress: MAC },
      'set-name': 'eth1',
      addresses: ['10.0.0.5/24'],
      nameservers: { addresses: ['10.0.0.1'] },
    });
  });

  it('refuses what cannot both hold, saying why', () => {
    const cases: Array<[string, FixedNetworkRequest, RegExp]> = [
      [
        'version: 1\nconfig:\n  - type: physical\n    name: enp1s0\n    subnets: [{type: dhcp}]\n',
        staticNic(),
        /configures the machine's only interface/,
      ],
      [
        `version: 1\nconfig:\n  - type: physical\n    name: x\n    mac_address: "${MAC.toUpperCase()}"\n    subnets: [{type: dhcp}]\n`,
        staticNic({ interfaceCount: 2 }),
        /configures the interface with MAC/,
      ],
      ['version: 2\nethernets:\n  eth0: {dhcp4: true}\n', staticNic({ interfaceCount: 2 }), /named eth0/],
      [
        'version: 1\nconfig:\n  - type: physical\n    name: enp1s0\n    subnets: [{type: static, address: 10.9.0.2/24, gateway: 10.9.0.1}]\n',
        staticNic({ nic: { index: 1, mac: MAC }, interfaceCount: 2 }),
        /sets a default gateway and --harvester-ip-pool-info sets 192\.168\.100\.1/,
      ],
      [
        'version: 2\nethernets:\n  enp1s0: {routes: [{to: default, via: 10.9.0.1}]}\n',
        staticNic({ nic: { index: 1, mac: MAC }, interfaceCount: 2 }),
        /sets a default gateway/,
      ],
      ['version: 3\n', staticNic(), /version/],
    ];
    for (const [user, req, expected] of cases) {
      const r = fixedNetworkData(user, req);
      assert.ok(!('text' in r) && r.problems.some((p) => expected.test(p)), `${user}: ${JSON.stringify(r)}`);
    }
  });

  it('takes nameservers alone next to a single NIC', () => {
    const user = 'version: 1\nconfig:\n  - type: nameserver\n    address: [9.9.9.9]\n';
    assert.deepEqual(networkDataProblems(textOf(fixedNetworkData(user, staticNic()))), []);
  });
});
