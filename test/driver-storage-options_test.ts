// The storage performance options (harvester#11550) on the sandbox's real KubeVirt v1.7.0
// virt-api: a machine created with each option has it in its VM spec, the VM is admitted and
// virt-controller makes its instance (which virt-api admits too); each combination virt-api
// refuses is refused by us first, naming the field, with nothing created; and virt-api does
// refuse each of those when it gets one (the check is not ours alone).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ConfigError } from '../src/driver/config/index.js';
import type { Vm } from '../src/harvester-access/harvester-api.js';
import { admissionDenial, isKubeError } from '../src/kube/errors.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import type { FlagValue } from '../src/driver/machine-driver.js';
import { eventually } from './support/eventually.js';
import { newMachine, tempStore } from './support/machines.js';
import { useSandbox } from './support/sandbox-fixture.js';

const fixture = useSandbox();
const store = tempStore();
const ns = 'default';
const IMAGE = 'default/image-ubuntu';

function machine(name: string, flags: Record<string, FlagValue>) {
  const m = newMachine({
    name,
    kubeconfig: fixture.sandbox.kubeconfigs.harvesterDirect,
    storePath: store,
    clusterName: 'storage',
    flags,
  });
  after(() => m.driver.close());
  return m;
}

const diskInfo = (...disks: Array<Record<string, unknown>>): string => JSON.stringify({ disks });

async function createdVm(name: string, flags: Record<string, FlagValue>): Promise<Vm> {
  const { driver } = machine(name, flags);
  await driver.preCreateCheck();
  await driver.create();
  const admin = fixture.sandbox.harvester.admin;
  const vm = await admin.get<Vm>(Resources.virtualMachine, { namespace: ns, name });
  // virt-controller made the instance from it, and virt-api admitted that too.
  await eventually(`the instance of ${name}`, async () =>
    Boolean(await admin.find<KubeObject>(Resources.virtualMachineInstance, { namespace: ns, name })),
  );
  return vm;
}

/** The VM as the driver would send it, altered, straight to the apiserver: what virt-api says. */
async function virtApiRefusal(base: Vm, name: string, alter: (vm: Vm) => void): Promise<string> {
  const vm = structuredClone(base);
  vm.metadata = { name, namespace: ns, labels: base.metadata.labels ?? {} };
  delete (vm as { status?: unknown }).status;
  // Claims and MACs of its own: Harvester's validator refuses a VM naming another VM's claim
  // or MAC address before virt-api answers.
  for (const v of vm.spec.template.spec.volumes ?? [])
    if (v.persistentVolumeClaim) v.persistentVolumeClaim.claimName = `${name}-${v.name}`;
  for (const i of vm.spec.template.spec.domain.devices.interfaces ?? []) delete i.macAddress;
  alter(vm);
  const err = await fixture.sandbox.harvester.admin.create<Vm>(Resources.virtualMachine, vm).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isKubeError(err), `virt-api admitted ${name}: ${String(err)}`);
  const denial = admissionDenial(err);
  assert.ok(denial, `refused, but not by a webhook: ${err.message}`);
  return `${denial.webhook}: ${denial.message}`;
}

describe('storage options on KubeVirt v1.7.0', () => {
  let full: Vm | undefined;

  it('creates a machine with every option: the VM carries each, is admitted and gets its instance', async () => {
    const vm = await createdVm('storage-pool1-aaaaa-all', {
      'harvester-block-multi-queue': true,
      'harvester-io-threads-policy': 'supplementalPool',
      'harvester-io-thread-count': '2', // an int flag, as Rancher passes it
      'harvester-disk-info': diskInfo(
        { imageName: IMAGE, size: 10, bootOrder: 1, cache: 'none', io: 'native', dedicatedIOThread: true },
        { storageClassName: 'longhorn', size: 5, cache: 'writeback', io: 'threads' },
        { storageClassName: 'longhorn', size: 1, cache: 'writethrough' },
      ),
    });
    full = vm;
    const domain = vm.spec.template.spec.domain;
    assert.equal(domain.devices.blockMultiQueue, true);
    assert.equal(domain.ioThreadsPolicy, 'supplementalPool');
    assert.deepEqual(domain.ioThreads, { supplementalPoolThreadCount: 2 });
    const disks = (domain.devices.disks ?? []).map((d) => [d.name, d.cache, d.io, d.dedicatedIOThread]);
    assert.deepEqual(disks, [
      ['cloudinitdisk', undefined, undefined, undefined],
      ['disk-0', 'none', 'native', true],
      ['disk-1', 'writeback', 'threads', undefined],
      ['disk-2', 'writethrough', undefined, undefined],
    ]);
  });

  it('a disk with a dedicated I/O thread and no policy: the VM gets the shared policy, admitted', async () => {
    const vm = await createdVm('storage-pool1-aaaaa-dedicated', {
      'harvester-disk-info': diskInfo({ imageName: IMAGE, size: 10, dedicatedIOThread: true }),
    });
    const domain = vm.spec.template.spec.domain;
    assert.equal(domain.ioThreadsPolicy, 'shared');
    assert.equal(domain.devices.disks?.[1]?.dedicatedIOThread, true);
    assert.equal(domain.ioThreads, undefined);
  });

  it('the auto policy, admitted as given', async () => {
    const vm = await createdVm('storage-pool1-aaaaa-auto', {
      'harvester-io-threads-policy': 'auto',
      'harvester-disk-info': diskInfo({ imageName: IMAGE, size: 10, io: 'threads' }),
    });
    assert.equal(vm.spec.template.spec.domain.ioThreadsPolicy, 'auto');
    assert.equal(vm.spec.template.spec.domain.devices.blockMultiQueue, undefined);
  });

  // [what, flags, the flag we name, the field in our message, what virt-api names, how to make the VM so]
  const REFUSED: Array<[string, Record<string, FlagValue>, string, RegExp, RegExp, (vm: Vm) => void]> = [
    [
      'a dedicated I/O thread on a sata disk',
      {
        'harvester-disk-info': diskInfo({ imageName: IMAGE, size: 10, bus: 'sata', dedicatedIOThread: true }),
      },
      '--harvester-disk-info',
      /disks\[0\]\.dedicatedIOThread needs bus virtio \(got sata\)/,
      /IOThreads are not supported for disks on a sata bus/,
      (vm) => {
        const d = vm.spec.template.spec.domain.devices.disks?.[1];
        assert.ok(d);
        d.disk = { bus: 'sata' };
        d.dedicatedIOThread = true;
      },
    ],
    [
      'a cache mode KubeVirt does not know',
      { 'harvester-disk-info': diskInfo({ imageName: IMAGE, size: 10, cache: 'unsafe' }) },
      '--harvester-disk-info',
      /disks\[0\]\.cache "unsafe" is not a cache mode/,
      /disks\[1\]\.cache has invalid value unsafe/,
      (vm) => {
        const d = vm.spec.template.spec.domain.devices.disks?.[1];
        assert.ok(d);
        d.cache = 'unsafe';
      },
    ],
    [
      'an I/O mode KubeVirt does not know',
      { 'harvester-disk-info': diskInfo({ imageName: IMAGE, size: 10, io: 'io_uring' }) },
      '--harvester-disk-info',
      /disks\[0\]\.io "io_uring" is not an I\/O mode/,
      /Disk IO mode .* is not supported/,
      (vm) => {
        const d = vm.spec.template.spec.domain.devices.disks?.[1];
        assert.ok(d);
        d.io = 'io_uring';
      },
    ],
    [
      'a policy KubeVirt does not know',
      { 'harvester-io-threads-policy': 'dedicated' },
      '--harvester-io-threads-policy',
      /"dedicated" is not a policy/,
      /Invalid IOThreadsPolicy \(dedicated\)/,
      (vm) => {
        vm.spec.template.spec.domain.ioThreadsPolicy = 'dedicated';
      },
    ],
    [
      'supplementalPool without a thread count',
      { 'harvester-io-threads-policy': 'supplementalPool' },
      '--harvester-io-thread-count',
      /must be at least 1 with --harvester-io-threads-policy supplementalPool/,
      /the number of iothreads needs to be set and positive/,
      (vm) => {
        vm.spec.template.spec.domain.ioThreadsPolicy = 'supplementalPool';
        delete vm.spec.template.spec.domain.ioThreads;
      },
    ],
  ];

  for (const [what, flags, flag, ours, theirs, alter] of REFUSED) {
    it(`${what}: refused by us first, naming ${flag}, nothing created; virt-api refuses it too`, async () => {
      const admin = fixture.sandbox.harvester.admin;
      const before = (await admin.list<KubeObject>(Resources.virtualMachine, { namespace: ns })).items.length;
      const name = `storage-pool1-aaaaa-refused-${REFUSED.findIndex(([w]) => w === what)}`;
      const err = (() => {
        try {
          machine(name, flags);
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
      const named = err.problems.filter((p) => p.flag === flag);
      assert.equal(named.length, 1, err.message);
      assert.match(named[0]?.message ?? '', ours);
      const after = (await admin.list<KubeObject>(Resources.virtualMachine, { namespace: ns })).items.length;
      assert.equal(after, before, 'nothing created');

      assert.ok(full, 'the first test made the VM these alter');
      assert.match(await virtApiRefusal(full, `${name}-direct`, alter), theirs);
    });
  }

  it('refuses what virt-api would take but the VM could not run: native I/O without cache none', async () => {
    const err = (() => {
      try {
        machine('storage-pool1-aaaaa-native', {
          'harvester-disk-info': diskInfo({ imageName: IMAGE, size: 10, io: 'native', cache: 'writeback' }),
        });
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(
      err.message,
      /--harvester-disk-info: disks\[0\]\.io native needs cache none \(got cache writeback\)/,
    );
    assert.equal(
      await fixture.sandbox.harvester.admin.find(Resources.virtualMachine, {
        namespace: ns,
        name: 'storage-pool1-aaaaa-native',
      }),
      undefined,
    );
  });
});
