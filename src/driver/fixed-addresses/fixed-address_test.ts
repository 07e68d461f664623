// A claim ConfigMap naming the machine is someone else's input (anyone who may create
// ConfigMaps in the VM namespace can write one): it is used only when its address is the
// pool's and its MAC one interface's, and, once the machine recorded its claim's uid, only the
// ConfigMap with that uid. Every refusal happens before anything is created.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ANNOTATION_FIXED_ADDRESS,
  claimObject,
  fixedAddressAnnotation,
  fixedAddressOfVm,
  type ConfigMapObject,
  type FixedAddress,
} from '../../harvester/fixed-addresses/address-claims.js';
import { claimName, emptyIpPoolInfo, type IpPoolInfo } from '../../harvester/fixed-addresses/ip-pool.js';
import { CREATOR, LABEL_CREATOR, LABEL_VM_NAME } from '../../harvester/labels.js';
import { silentLogger } from '../../log/logger.js';
import { newDriverConfig } from '../config/index.js';
import type { ConfigMap, HarvesterApi, Vm } from '../../harvester-access/harvester-api.js';
import type { OperationContext } from '../operations/context.js';
import {
  AddressClaimRefusedError,
  freeMachineClaims,
  prepareFixedAddress,
  settleWithVm,
} from './fixed-address.js';

const NS = 'default';
const NETWORK = `${NS}/vlan100`;
const MACHINE = 'fixed-pool1-abc12-a';
const POOL: IpPoolInfo = {
  ...emptyIpPoolInfo(),
  network: NETWORK,
  range: '192.168.100.10-192.168.100.19',
  prefix: 24,
  gateway: '192.168.100.1',
  dns: ['192.168.100.1'],
};

let uids = 0;
const stored = (cm: ConfigMapObject, uid = `uid-${++uids}`): ConfigMap => ({
  ...cm,
  metadata: { ...cm.metadata, uid, resourceVersion: '1', creationTimestamp: new Date().toISOString() },
});

const planted = (address: string, mac = '02:00:00:00:00:09', machine = MACHINE): ConfigMap =>
  stored(
    claimObject(NS, machine, { address, network: NETWORK, mac, interface: 'nic-0' }),
    `planted-${address}`,
  );

function vmWith(fixed?: FixedAddress): Vm {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name: MACHINE,
      namespace: NS,
      uid: 'vm-uid',
      resourceVersion: '5',
      labels: { [LABEL_CREATOR]: CREATOR, [LABEL_VM_NAME]: MACHINE },
      annotations: fixed ? { [ANNOTATION_FIXED_ADDRESS]: fixedAddressAnnotation(fixed) } : {},
    },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          domain: { devices: { interfaces: [{ name: 'nic-0', macAddress: fixed?.mac ?? '' }] } },
        },
      },
    },
  } as unknown as Vm;
}

/** A Harvester with these ConfigMaps (and maybe the machine's VM); it records every write. */
function harvester(configMaps: ConfigMap[], vm?: Vm) {
  const cms = new Map(configMaps.map((c) => [c.metadata.name, c]));
  const writes: string[] = [];
  let current = vm;
  const api = {
    findNetwork: () => Promise.resolve({ metadata: { name: 'vlan100', namespace: NS } }),
    findVm: () => Promise.resolve(current),
    listConfigMaps: () => Promise.resolve([...cms.values()]),
    findConfigMap: (_: string, name: string) => Promise.resolve(cms.get(name)),
    createConfigMap: (cm: ConfigMapObject) => {
      writes.push(`create ${cm.metadata.name}`);
      if (cms.has(cm.metadata.name)) return Promise.reject(new Error('AlreadyExists'));
      const made = stored(cm);
      cms.set(cm.metadata.name, made);
      return Promise.resolve(made);
    },
    deleteConfigMap: (cm: ConfigMap) => {
      writes.push(`delete ${cm.metadata.name}`);
      cms.delete(cm.metadata.name);
      return Promise.resolve(true);
    },
    patchVmAnnotations: (_: Vm, annotations: Record<string, string>) => {
      writes.push(`annotate VM ${Object.keys(annotations).join()}`);
      if (current)
        current = {
          ...current,
          metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, ...annotations } },
        };
      return Promise.resolve(current);
    },
  } as unknown as HarvesterApi;
  return { api, writes, cms, vm: () => current };
}

function context(api: HarvesterApi, fixed: FixedAddress | null = null): OperationContext {
  const config = newDriverConfig(MACHINE, '/store');
  config.VMNamespace = NS;
  config.NetworkName = NETWORK;
  config.HarvesterMachine.IPPoolInfo = POOL;
  config.HarvesterMachine.FixedAddress = fixed;
  return {
    config,
    api,
    log: silentLogger,
    sshKeyPath: '/store/id_rsa',
    kubeconfigTrust: 'operator',
  };
}

const refused = (what: RegExp) => (err: unknown) =>
  err instanceof AddressClaimRefusedError && what.test(err.message);

describe('a claim naming the machine, before its VM exists', () => {
  for (const [what, address, why] of [
    ['the gateway', '192.168.100.1', /its "address" 192\.168\.100\.1 is outside the pool's range/],
    [
      'another subnet',
      '10.0.0.5',
      /its "address" 10\.0\.0\.5 is outside the pool's subnet 192\.168\.100\.0\/24/,
    ],
  ] as const)
    it(`is refused when its address is ${what}, naming it, and nothing is created`, async () => {
      const claim = planted(address);
      const { api, writes } = harvester([claim]);
      await assert.rejects(
        prepareFixedAddress(context(api), POOL),
        refused(new RegExp(`address claim ConfigMap ${NS}/${claim.metadata.name}: ${why.source}`)),
      );
      assert.deepEqual(writes, [], 'no claim made, none deleted, no VM');
    });

  it('is refused when its MAC is not one unicast interface address', async () => {
    for (const mac of ['01:00:5e:00:00:01', 'ff:ff:ff:ff:ff:ff', '00:00:00:00:00:00', 'not-a-mac']) {
      const claim = planted('192.168.100.12', mac);
      const { api, writes } = harvester([claim]);
      await assert.rejects(
        prepareFixedAddress(context(api), POOL),
        refused(new RegExp(`ConfigMap ${NS}/${claim.metadata.name}: its "mac" "${mac}"`)),
        mac,
      );
      assert.deepEqual(writes, []);
    }
  });

  it('is used when it is one the pool hands out with a unicast MAC (an earlier attempt’s), binding its uid', async () => {
    const claim = planted('192.168.100.12', '02:00:00:00:00:0a');
    const { api, writes } = harvester([claim]);
    const prepared = await prepareFixedAddress(context(api), POOL);
    assert.equal(prepared.fixed?.address, '192.168.100.12');
    assert.equal(prepared.fixed?.claimUid, claim.metadata.uid);
    assert.equal(prepared.macs['nic-0'], '02:00:00:00:00:0a');
    assert.deepEqual(writes, []);
  });

  it('a new claim binds its uid', async () => {
    const { api, cms } = harvester([]);
    const prepared = await prepareFixedAddress(context(api), POOL);
    const made = cms.get(claimName(NETWORK, '192.168.100.10'));
    assert.ok(made?.metadata.uid);
    assert.equal(prepared.fixed?.claimUid, made.metadata.uid);
  });

  it('leaves alone a bad claim it does not use, and uses its own', async () => {
    const own = planted('192.168.100.11');
    const bad = planted('192.168.100.19', '01:00:00:00:00:01');
    const { api, writes } = harvester([own, bad]);
    const prepared = await prepareFixedAddress(context(api), POOL);
    assert.equal(prepared.fixed?.address, '192.168.100.11');
    assert.deepEqual(writes, [], 'the bad one is not deleted either');
  });
});

describe('the claim a machine recorded (by uid)', () => {
  const recorded = (uid: string): FixedAddress => ({
    address: '192.168.100.13',
    prefix: 24,
    interface: 'nic-0',
    mac: '02:00:00:00:00:0d',
    network: NETWORK,
    source: 'pool',
    holder: claimName(NETWORK, '192.168.100.13'),
    claimUid: uid,
  });

  it('is continued with when the ConfigMap has its uid', async () => {
    const claim = planted('192.168.100.13', '02:00:00:00:00:0d');
    const { api } = harvester([claim], vmWith(recorded(claim.metadata.uid ?? '')));
    const prepared = await prepareFixedAddress(context(api), POOL);
    assert.equal(prepared.claim, claim);
    assert.equal(prepared.fixed?.claimUid, claim.metadata.uid);
  });

  it('is not one replaced by a ConfigMap with another uid: refused, nothing written', async () => {
    const replaced = planted('192.168.100.13', '02:00:00:00:00:66');
    const { api, writes } = harvester([replaced], vmWith(recorded('uid-the-machine-made')));
    await assert.rejects(
      prepareFixedAddress(context(api), POOL),
      refused(
        /ConfigMap default\/hm-ip-[0-9a-f]{10}-192-168-100-13 is not the claim this machine made for 192\.168\.100\.13 \(its uid planted-192\.168\.100\.13, the machine's uid-the-machine-made\)/,
      ),
    );
    assert.deepEqual(writes, []);
  });

  it('settling with a VM another attempt made never takes a replaced claim', async () => {
    const replaced = planted('192.168.100.13');
    const { api, writes } = harvester([replaced]);
    const ctx = context(api);
    const prepared = await prepareFixedAddress(ctx, POOL);
    await assert.rejects(
      settleWithVm(ctx, prepared, vmWith(recorded('uid-the-machine-made'))),
      refused(/is not the claim this machine made/),
    );
    assert.ok(!writes.includes(`delete ${replaced.metadata.name}`));
  });

  it('made again when gone, is recorded on the VM with its new uid', async () => {
    const { api, vm, cms } = harvester([], vmWith(recorded('uid-gone')));
    const prepared = await prepareFixedAddress(context(api), POOL);
    const made = cms.get(claimName(NETWORK, '192.168.100.13'));
    assert.equal(prepared.fixed?.claimUid, made?.metadata.uid);
    assert.equal(fixedAddressOfVm(vm()?.metadata.annotations)?.claimUid, made?.metadata.uid);
  });

  it('Remove deletes only the claim with the recorded uid', async () => {
    const replaced = planted('192.168.100.13');
    const { api, writes } = harvester([replaced]);
    await freeMachineClaims(context(api, recorded('uid-the-machine-made')));
    assert.deepEqual(writes, []);
    const own = planted('192.168.100.13');
    const again = harvester([own]);
    await freeMachineClaims(context(again.api, recorded(own.metadata.uid ?? '')));
    assert.deepEqual(again.writes, [`delete ${own.metadata.name}`]);
  });
});
