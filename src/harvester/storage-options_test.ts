import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { newGoDriverConfig, type GoDiskInfo, type GoDriverConfig } from './config/go-config.js';
import {
  CACHE_MODES,
  diskStorageProblems,
  effectiveIoThreadsPolicy,
  IO_MODES,
  ioThreadProblems,
  MAX_IO_THREAD_COUNT,
} from './storage-options.js';
import { buildVirtualMachine } from './vm-spec.js';

type DiskEntry = GoDiskInfo['disks'][number];
const disk = (d: Partial<DiskEntry> = {}): DiskEntry => ({
  imageName: 'default/img',
  storageClassName: '',
  size: 10,
  bootOrder: 0,
  bus: '',
  type: '',
  hotPlugAble: false,
  ...d,
});

function config(overrides: Partial<GoDriverConfig>): GoDriverConfig {
  return {
    ...newGoDriverConfig('c-pool1-abc12-x2v9q', '/store'),
    VMNamespace: 'default',
    CPU: 2,
    MemorySize: '4Gi',
    NetworkName: 'default/vlan1',
    SSHUser: 'ubuntu',
    ...overrides,
  };
}

const build = (cfg: GoDriverConfig) =>
  buildVirtualMachine(cfg, {
    random: () => 'aaaaa',
    imageStorageClass: () => 'longhorn-img',
    sshPublicKey: 'ssh-ed25519 AAAA x',
  }).vm;

describe('storage options: checks', () => {
  it('accepts every cache and io mode KubeVirt takes, except native without cache none', () => {
    for (const cache of ['', ...CACHE_MODES]) {
      for (const io of ['', ...IO_MODES]) {
        const problems = diskStorageProblems(disk({ cache, io }), 'disks[0]');
        if (io === 'native' && cache !== 'none')
          assert.match(problems.join(), /disks\[0\]\.io native needs cache none/);
        else assert.deepEqual(problems, [], `${cache}/${io}`);
      }
    }
  });

  it('a dedicated thread: only on virtio (the default bus of a disk), never on a cd-rom', () => {
    assert.deepEqual(diskStorageProblems(disk({ dedicatedIOThread: true }), 'disks[0]'), []);
    assert.deepEqual(diskStorageProblems(disk({ dedicatedIOThread: true, bus: 'virtio' }), 'disks[0]'), []);
    for (const bus of ['sata', 'scsi', 'usb']) {
      assert.match(
        diskStorageProblems(disk({ dedicatedIOThread: true, bus }), 'disks[2]').join(),
        new RegExp(`^disks\\[2\\]\\.dedicatedIOThread needs bus virtio \\(got ${bus}\\)`),
      );
    }
    assert.match(
      diskStorageProblems(disk({ type: 'cd-rom', dedicatedIOThread: true }), 'disks[1]').join(),
      /^disks\[1\] is a cd-rom: dedicatedIOThread is for disks only/,
    );
    assert.deepEqual(diskStorageProblems(disk({ type: 'cd-rom', bus: 'sata' }), 'disks[1]'), []);
  });

  it('the count: 0..2^32-1, above 0 only with supplementalPool, which needs at least 1', () => {
    const fields = (IOThreadsPolicy: string, IOThreadCount: number) =>
      ioThreadProblems({ IOThreadsPolicy, IOThreadCount }).map((p) => p.field);
    assert.deepEqual(fields('', 0), []);
    assert.deepEqual(fields('shared', 0), []);
    assert.deepEqual(fields('auto', 0), []);
    assert.deepEqual(fields('supplementalPool', 1), []);
    assert.deepEqual(fields('supplementalPool', MAX_IO_THREAD_COUNT), []);
    assert.deepEqual(fields('supplementalPool', MAX_IO_THREAD_COUNT + 1), ['ioThreadCount']);
    assert.deepEqual(fields('supplementalPool', 0), ['ioThreadCount']);
    assert.deepEqual(fields('auto', 2), ['ioThreadCount']);
    assert.deepEqual(fields('Shared', 0), ['ioThreadsPolicy']);
    fc.assert(
      fc.property(
        fc.integer({ min: -10, max: 2 ** 33 }),
        fc.constantFrom('', 'shared', 'auto', 'supplementalPool'),
        (n, p) => {
          const ok = fields(p, n).length === 0;
          const expected = p === 'supplementalPool' ? n >= 1 && n <= MAX_IO_THREAD_COUNT : n === 0;
          return ok === expected;
        },
      ),
    );
  });
});

describe('storage options: the VM', () => {
  it('carries multi-queue, the policy, the pool size and each disk’s cache, io and dedicated thread', () => {
    const vm = build(
      config({
        BlockMultiQueue: true,
        IOThreadsPolicy: 'supplementalPool',
        IOThreadCount: 3,
        DiskInfo: {
          disks: [
            disk({ bootOrder: 1, cache: 'none', io: 'native', dedicatedIOThread: true }),
            disk({ imageName: '', storageClassName: 'sc', cache: 'writethrough', io: 'threads' }),
            disk({ type: 'cd-rom' }),
          ],
        },
      }),
    );
    const domain = vm.spec.template.spec.domain;
    assert.equal(domain.devices.blockMultiQueue, true);
    assert.equal(domain.ioThreadsPolicy, 'supplementalPool');
    assert.deepEqual(domain.ioThreads, { supplementalPoolThreadCount: 3 });
    assert.deepEqual(domain.devices.disks, [
      { name: 'cloudinitdisk', disk: { bus: 'virtio' } },
      {
        name: 'disk-0',
        disk: { bus: 'virtio' },
        bootOrder: 1,
        cache: 'none',
        io: 'native',
        dedicatedIOThread: true,
      },
      { name: 'disk-1', disk: { bus: 'virtio' }, cache: 'writethrough', io: 'threads' },
      { name: 'disk-2', cdrom: { bus: 'sata' } },
    ]);
  });

  it('a dedicated thread without a policy turns on shared; none of the fields without the options', () => {
    const dedicated = config({ DiskInfo: { disks: [disk({ dedicatedIOThread: true })] } });
    assert.equal(effectiveIoThreadsPolicy(dedicated), 'shared');
    assert.equal(build(dedicated).spec.template.spec.domain.ioThreadsPolicy, 'shared');
    const auto = config({
      IOThreadsPolicy: 'auto',
      DiskInfo: { disks: [disk({ dedicatedIOThread: true })] },
    });
    assert.equal(build(auto).spec.template.spec.domain.ioThreadsPolicy, 'auto');

    const plain = build(config({ DiskInfo: { disks: [disk()] } })).spec.template.spec.domain;
    for (const key of ['ioThreadsPolicy', 'ioThreads']) assert.ok(!(key in plain), key);
    assert.ok(!('blockMultiQueue' in plain.devices));
    assert.deepEqual(plain.devices.disks?.[1], { name: 'disk-0', disk: { bus: 'virtio' } });
  });
});
