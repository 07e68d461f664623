// The storage performance options (harvester#11550): virtio block multi-queue, the I/O
// threads policy and its pool size for the whole VM, and per disk the host cache mode, QEMU's
// I/O mode and a dedicated I/O thread. What they may be is what the Go driver's work on them
// accepts, plus what KubeVirt v1.7.0's virt-api refuses, checked here first so that nothing
// is created for a config that cannot become a VM (docs/upstream/kubevirt.md#storage-options).
// Pure: the checks return phrases that follow a flag's name; the VM gets the fields here too.

import type { GoDiskInfo, GoDriverConfig } from './config/go-config.js';
import type { DomainSpec } from './types.js';

export const CACHE_MODES = ['none', 'writethrough', 'writeback'] as const;
export const IO_MODES = ['native', 'threads'] as const;
export const IO_THREADS_POLICIES = ['shared', 'auto', 'supplementalPool'] as const;
/** KubeVirt's supplementalPoolThreadCount is a uint32. */
export const MAX_IO_THREAD_COUNT = 2 ** 32 - 1;
/** The policy a dedicated I/O thread turns on when none is given (as Rancher's form says). */
export const DEDICATED_THREAD_POLICY = 'shared';

type DiskOptions = GoDiskInfo['disks'][number];

const listed = (values: readonly string[]): string => values.join(', ');

/** The bus a disk gets when it names none: as vm-spec.ts's diskRequests decides it. */
function effectiveBus(d: DiskOptions): string {
  return d.bus || (d.type === 'cd-rom' ? 'sata' : 'virtio');
}

/** Problems of one disk's storage options; `where` is "disks[i]". */
export function diskStorageProblems(d: DiskOptions, where: string): string[] {
  const problems: string[] = [];
  const cache = d.cache ?? '';
  const io = d.io ?? '';
  const dedicated = d.dedicatedIOThread ?? false;
  if (cache !== '' && !(CACHE_MODES as readonly string[]).includes(cache)) {
    problems.push(`${where}.cache "${cache}" is not a cache mode (expected one of ${listed(CACHE_MODES)})`);
  }
  if (io !== '' && !(IO_MODES as readonly string[]).includes(io)) {
    problems.push(`${where}.io "${io}" is not an I/O mode (expected one of ${listed(IO_MODES)})`);
  }
  if (io === 'native' && cache !== 'none') {
    problems.push(
      `${where}.io native needs cache none (got ${cache === '' ? 'no cache' : `cache ${cache}`}): QEMU's native I/O bypasses the host cache, and the VM would not start`,
    );
  }
  if (d.type === 'cd-rom') {
    const set = [cache !== '' && 'cache', io !== '' && 'io', dedicated && 'dedicatedIOThread'].filter(
      (x): x is string => typeof x === 'string',
    );
    if (set.length > 0) {
      problems.push(
        `${where} is a cd-rom: ${set.join(', ')} ${set.length === 1 ? 'is' : 'are'} for disks only (leave ${set.length === 1 ? 'it' : 'them'} out)`,
      );
    }
  } else if (dedicated && effectiveBus(d) !== 'virtio') {
    problems.push(
      `${where}.dedicatedIOThread needs bus virtio (got ${effectiveBus(d)}): KubeVirt refuses an I/O thread on any other bus`,
    );
  }
  return problems;
}

export interface IoThreadProblem {
  field: 'ioThreadsPolicy' | 'ioThreadCount';
  phrase: string;
}

/** Problems of the VM-wide options (policy and pool size). */
export function ioThreadProblems(
  cfg: Pick<GoDriverConfig, 'IOThreadsPolicy' | 'IOThreadCount'>,
): IoThreadProblem[] {
  const problems: IoThreadProblem[] = [];
  const policy = cfg.IOThreadsPolicy;
  const count = cfg.IOThreadCount;
  if (policy !== '' && !(IO_THREADS_POLICIES as readonly string[]).includes(policy)) {
    problems.push({
      field: 'ioThreadsPolicy',
      phrase: `"${policy}" is not a policy (expected one of ${listed(IO_THREADS_POLICIES)})`,
    });
  }
  if (!Number.isInteger(count) || count < 0 || count > MAX_IO_THREAD_COUNT) {
    problems.push({
      field: 'ioThreadCount',
      phrase: `must be a whole number from 0 to ${MAX_IO_THREAD_COUNT} (got ${count})`,
    });
  } else if (count > 0 && policy !== 'supplementalPool') {
    problems.push({
      field: 'ioThreadCount',
      phrase: `is only for --harvester-io-threads-policy supplementalPool (got ${policy === '' ? 'no policy' : `policy ${policy}`}); leave it at 0`,
    });
  } else if (count === 0 && policy === 'supplementalPool') {
    // KubeVirt's virt-api refuses a supplementalPool without a positive count.
    problems.push({
      field: 'ioThreadCount',
      phrase:
        'must be at least 1 with --harvester-io-threads-policy supplementalPool (KubeVirt refuses a pool of none)',
    });
  }
  return problems;
}

/** The policy the VM gets: the one given, else shared when a disk asks for its own thread. */
export function effectiveIoThreadsPolicy(cfg: Pick<GoDriverConfig, 'IOThreadsPolicy' | 'DiskInfo'>): string {
  if (cfg.IOThreadsPolicy !== '') return cfg.IOThreadsPolicy;
  const dedicated = cfg.DiskInfo?.disks.some((d) => d.dedicatedIOThread === true) ?? false;
  return dedicated ? DEDICATED_THREAD_POLICY : '';
}

/** Multi-queue, the policy and the pool size on the domain (the per-disk fields are set with the disks). */
export function applyIoThreadOptions(
  domain: DomainSpec,
  cfg: Pick<GoDriverConfig, 'BlockMultiQueue' | 'IOThreadsPolicy' | 'IOThreadCount' | 'DiskInfo'>,
): void {
  if (cfg.BlockMultiQueue) domain.devices.blockMultiQueue = true;
  const policy = effectiveIoThreadsPolicy(cfg);
  if (policy !== '') domain.ioThreadsPolicy = policy;
  if (policy === 'supplementalPool' && cfg.IOThreadCount > 0) {
    domain.ioThreads = { supplementalPoolThreadCount: cfg.IOThreadCount };
  }
}

/** The disk's own fields, as KubeVirt names them; only those set. */
export function diskStorageFields(d: DiskOptions): {
  cache?: string;
  io?: string;
  dedicatedIOThread?: boolean;
} {
  const fields: { cache?: string; io?: string; dedicatedIOThread?: boolean } = {};
  if (d.cache) fields.cache = d.cache;
  if (d.io) fields.io = d.io;
  if (d.dedicatedIOThread) fields.dedicatedIOThread = true;
  return fields;
}
