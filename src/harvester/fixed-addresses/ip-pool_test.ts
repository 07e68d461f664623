import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { newGoDriverConfig, type GoDriverConfig } from '../config/go-config.js';
import {
  claimName,
  describePool,
  emptyIpPoolInfo,
  ipPoolInfoProblems,
  parseIpPoolInfo,
  poolAddresses,
  poolAddressProblem,
  poolInterface,
  type IpPoolInfo,
} from './ip-pool.js';
import { formatIpv4, parseCidr, parseIpv4, parseIpv4Range } from './ipv4.js';

const machine = (over: Partial<GoDriverConfig> = {}): GoDriverConfig => ({
  ...newGoDriverConfig('pool1-abc-xyz'),
  VMNamespace: 'default',
  NetworkName: 'default/vlan100',
  ...over,
});
const pool = (over: Partial<IpPoolInfo> = {}): IpPoolInfo => ({
  ...emptyIpPoolInfo(),
  network: 'default/vlan100',
  range: '192.168.100.10-192.168.100.19',
  prefix: 24,
  gateway: '192.168.100.1',
  dns: ['192.168.100.1'],
  ...over,
});

describe('IPv4', () => {
  it('parses exactly four decimal octets, without leading zeros', () => {
    assert.equal(parseIpv4('10.0.0.1'), 167772161);
    for (const bad of ['10.0.0', '10.0.0.256', '010.0.0.1', '1.2.3.4.5', ' 1.2.3.4', '1.2.3.a', '::1', ''])
      assert.equal(parseIpv4(bad), undefined, bad);
  });

  it('formats what it parses, for every address', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        assert.equal(formatIpv4(parseIpv4(ip) ?? -1), ip);
      }),
    );
  });

  it('reads a CIDR as its network and a range of one, two or a CIDR of addresses', () => {
    assert.deepEqual(parseCidr('192.168.100.77/24'), { base: parseIpv4('192.168.100.0'), prefix: 24 });
    assert.equal(parseCidr('192.168.100.0/33'), undefined);
    assert.deepEqual(parseIpv4Range('10.0.0.5'), {
      first: parseIpv4('10.0.0.5'),
      last: parseIpv4('10.0.0.5'),
    });
    assert.deepEqual(parseIpv4Range('10.0.0.5-10.0.0.9'), {
      first: parseIpv4('10.0.0.5'),
      last: parseIpv4('10.0.0.9'),
    });
    assert.equal(parseIpv4Range('10.0.0.9-10.0.0.5'), undefined, 'backwards');
    assert.deepEqual(parseIpv4Range('10.0.0.0/30'), {
      first: parseIpv4('10.0.0.0'),
      last: parseIpv4('10.0.0.3'),
    });
  });
});

describe('--harvester-ip-pool-info', () => {
  it('parses the JSON and refuses unknown keys and wrong types, naming them', () => {
    assert.deepEqual(parseIpPoolInfo(JSON.stringify(pool())).value, pool());
    assert.match(parseIpPoolInfo('{"network":"a","ranges":"x"}').problems.join(), /unknown key "ranges"/);
    assert.match(parseIpPoolInfo('{"network":7}').problems.join(), /"network" must be a string/);
    assert.match(parseIpPoolInfo('{"dns":"1.1.1.1"}').problems.join(), /"dns" must be a list of strings/);
    assert.match(parseIpPoolInfo('{"prefix":"24"}').problems.join(), /"prefix" must be a whole number/);
    assert.match(parseIpPoolInfo('[1]').problems.join(), /must be a JSON object/);
    assert.match(parseIpPoolInfo('{').problems.join(), /not valid JSON/);
  });

  it('accepts a described pool and a Harvester IP pool’s network alone', () => {
    assert.deepEqual(ipPoolInfoProblems(pool(), machine()), []);
    assert.deepEqual(ipPoolInfoProblems({ ...emptyIpPoolInfo(), network: 'vlan100' }, machine()), []);
    assert.deepEqual(
      ipPoolInfoProblems(
        pool({ range: '', cidr: '192.168.100.0/28', prefix: 0, gateway: '192.168.100.1' }),
        machine(),
      ),
      [],
    );
  });

  it('refuses what cannot work, each problem named', () => {
    const cases: Array<[Partial<IpPoolInfo>, RegExp]> = [
      [{ network: '' }, /needs "network"/],
      [{ network: 'default/other' }, /none of the machine's networks/],
      [{ network: 'a/b/c' }, /"network" must be "name" or "namespace\/name"/],
      [{ interface: 'nic-3' }, /none of the machine's interfaces/],
      [{ range: '192.168.100.10-192.168.100.300' }, /"range" .* is not an address range/],
      [{ cidr: '192.168.100.0/24', range: '192.168.101.10-192.168.101.20' }, /not inside "cidr"/],
      [{ prefix: 0 }, /needs "prefix"/],
      [{ prefix: 33 }, /not a prefix length/],
      [{ cidr: '192.168.100.0/24', prefix: 25 }, /differs from the CIDR's \/24/],
      [{ gateway: '10.0.0.1' }, /"gateway" 10\.0\.0\.1 is outside the pool's subnet 192\.168\.100\.0\/24/],
      [{ gateway: 'router' }, /"gateway" "router" is not an IPv4 address/],
      [{ dns: ['1.1.1.1', '8.8.8.8', '9.9.9.9', '1.0.0.1'] }, /uses only the first 3/],
      [{ dns: ['dns.example'] }, /dns\[0\] "dns.example" is not an IPv4 address/],
      [{ exclude: ['10.0.0.x'] }, /exclude\[0\]/],
      [
        { range: '192.168.100.10-192.168.100.11', exclude: ['192.168.100.10-192.168.100.11'] },
        /leaves no address/,
      ],
      [{ range: '', cidr: '10.0.0.0/8', prefix: 0, gateway: '' }, /a pool holds at most 65536/],
      [{ range: '192.168.100.250-192.168.101.5' }, /spans more than one \/24 subnet/],
      [{ range: 'fd00::10-fd00::20' }, /IPv4 addresses only/],
    ];
    for (const [over, expected] of cases) {
      const problems = ipPoolInfoProblems(pool(over), machine());
      assert.ok(
        problems.some((p) => expected.test(p)),
        `${JSON.stringify(over)}: ${problems.join(' | ')}`,
      );
    }
  });

  it('refuses settings of a Harvester IP pool’s when no addresses are described', () => {
    const problems = ipPoolInfoProblems(
      { ...emptyIpPoolInfo(), network: 'vlan100', gateway: '10.0.0.1' },
      machine(),
    );
    assert.match(problems.join(), /gives gateway without "range" or "cidr"/);
  });

  it('finds the interface on the pool’s network, or the one named', () => {
    const twoNics = machine({
      NetworkName: '',
      NetworkInfo: {
        interfaces: [
          { networkName: 'default/mgmt', macAddress: '', model: '', type: '' },
          { networkName: 'vlan100', macAddress: '', model: '', type: '' },
        ],
      },
    });
    assert.equal(poolInterface(pool(), twoNics), 'nic-1');
    assert.equal(poolInterface(pool({ interface: 'nic-1' }), twoNics), 'nic-1');
    assert.match(ipPoolInfoProblems(pool({ interface: 'nic-0' }), twoNics).join(), /nic-0 is not on network/);
  });

  it('hands out the range less the network, broadcast, gateway, DNS and exclusions, in order', () => {
    assert.deepEqual(
      poolAddresses(
        pool({
          range: '',
          cidr: '192.168.100.0/29',
          prefix: 0,
          exclude: ['192.168.100.3-192.168.100.4'],
          dns: ['192.168.100.6'],
        }),
      ),
      ['192.168.100.2', '192.168.100.5'],
    );
    assert.equal(poolAddresses(pool()).length, 10);
    assert.deepEqual(poolAddresses(pool({ range: '192.168.100.1-192.168.100.3' })), [
      '192.168.100.2',
      '192.168.100.3',
    ]);
    assert.deepEqual(
      poolAddresses({ ...emptyIpPoolInfo(), network: 'vlan100' }),
      [],
      'a Harvester IP pool’s',
    );
  });

  it('never hands out an excluded address, whatever the exclusions', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 8 }), (offsets) => {
        const exclude = offsets.map((o) => `10.1.0.${o}`);
        const addresses = poolAddresses(
          pool({
            network: 'vlan100',
            range: '10.1.0.0-10.1.0.40',
            prefix: 24,
            gateway: '',
            dns: [],
            exclude,
          }),
        );
        for (const e of exclude) assert.ok(!addresses.includes(e));
        assert.ok(!addresses.includes('10.1.0.0'), 'network address');
      }),
    );
  });

  it('says why an address is not the pool’s: another subnet, outside the range, network, broadcast, gateway, DNS, excluded', () => {
    const p = pool({ exclude: ['192.168.100.15'], dns: ['192.168.100.12'] });
    for (const [address, why] of [
      ['10.0.0.5', /outside the pool's subnet 192\.168\.100\.0\/24/],
      ['192.168.100.9', /outside the pool's range 192\.168\.100\.10-192\.168\.100\.19/],
      ['192.168.100.15', /excluded by the pool's exclude\[0\] "192\.168\.100\.15"/],
      ['192.168.100.12', /one of the pool's DNS servers/],
      ['192.168.100.010', /not an IPv4 address/],
      ['', /not an IPv4 address/],
    ] as const)
      assert.match(poolAddressProblem(p, address) ?? '', why, address);
    const whole = pool({ range: '', cidr: '192.168.100.0/24', prefix: 0 });
    assert.match(poolAddressProblem(whole, '192.168.100.1') ?? '', /the pool's gateway/);
    assert.match(poolAddressProblem(whole, '192.168.100.0') ?? '', /network address of 192\.168\.100\.0\/24/);
    assert.match(poolAddressProblem(whole, '192.168.100.255') ?? '', /broadcast address/);
    assert.equal(poolAddressProblem(p, '192.168.100.10'), undefined);
    assert.match(
      poolAddressProblem({ ...emptyIpPoolInfo(), network: 'vlan100' }, '10.0.0.1') ?? '',
      /describes no addresses/,
    );
  });

  it('accepts exactly the addresses it hands out, whatever the pool', () => {
    fc.assert(
      fc.property(
        fc.record({
          first: fc.integer({ min: 0, max: 30 }),
          span: fc.integer({ min: 0, max: 12 }),
          prefix: fc.integer({ min: 26, max: 32 }),
          gateway: fc.option(fc.integer({ min: 0, max: 63 }), { nil: undefined }),
          dns: fc.array(fc.integer({ min: 0, max: 63 }), { maxLength: 2 }),
          exclude: fc.array(fc.integer({ min: 0, max: 63 }), { maxLength: 3 }),
          byCidr: fc.boolean(),
        }),
        ({ first, span, prefix, gateway, dns, exclude, byCidr }) => {
          const at = (o: number): string => `10.2.0.${o}`;
          const info = pool({
            network: 'vlan100',
            range: byCidr ? '' : `${at(first)}-${at(Math.min(first + span, 63))}`,
            cidr: byCidr ? `10.2.0.${first - (first % 2 ** (32 - prefix))}/${prefix}` : '',
            prefix: byCidr ? 0 : 26,
            gateway: gateway === undefined ? '' : at(gateway),
            dns: dns.map(at),
            exclude: exclude.map(at),
          });
          const handed = new Set(poolAddresses(info));
          for (let o = 0; o < 70; o++) {
            const a = o < 64 ? at(o) : `10.3.0.${o}`;
            assert.equal(
              poolAddressProblem(info, a) === undefined,
              handed.has(a),
              `${a} of ${JSON.stringify(info)}`,
            );
          }
        },
      ),
    );
  });

  it('names one claim per network and address, valid as a Kubernetes name', () => {
    const a = claimName('default/vlan100', '192.168.100.10');
    assert.match(a, /^hm-ip-[0-9a-f]{10}-192-168-100-10$/);
    assert.notEqual(a, claimName('default/vlan200', '192.168.100.10'), 'another network');
    assert.equal(a, claimName('default/vlan100', '192.168.100.10'), 'stable');
    assert.equal(
      describePool(pool({ network: 'vlan100' }), 'tenant'),
      'tenant/vlan100 192.168.100.10-192.168.100.19',
    );
  });
});
