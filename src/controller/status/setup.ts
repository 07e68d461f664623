// The status report: the ConfigMap the leader rewrites when something the summary shows
// changed (the shared statusChanged source), and the log line once the caches synced.
import v8 from 'node:v8';
import type { Manager } from '../../kube/index.js';
import type { CredentialMonitor } from '../credentials/credential-monitor.js';
import type { MachineReconciler } from '../gate/machine-reconciler.js';
import type { GuestVolumeRecord } from '../guest-volumes/setup.js';
import { formatSecretRef } from '../common/credential-choice.js';
import type { Shared } from '../common/setup-context.js';
import { collectReferences } from '../credentials/references.js';
import { buildSummary, StatusWriter } from './status-report.js';

/** What the summary shows, from the controllers that know it. */
export interface StatusSources {
  monitor: CredentialMonitor;
  reconciler: MachineReconciler;
  guest: GuestVolumeRecord;
}

export function setup(
  manager: Manager,
  shared: Shared,
  sources: StatusSources,
  options: { intervalMs?: number | undefined } = {},
): void {
  const { caches, config, logger } = shared;
  const { monitor, reconciler, guest } = sources;
  const summary = (): ReturnType<typeof buildSummary> => {
    // Grouped once: with thousands of machines, a pass over every reference per credential adds up.
    const referrers = new Map<string, string[]>();
    for (const c of collectReferences(caches.provisioningClusters.list(), caches.harvesterMachines.list()))
      for (const r of c.references) {
        const secret = formatSecretRef(r.credential);
        const list = referrers.get(secret);
        if (list) list.push(r.referrer);
        else referrers.set(secret, [r.referrer]);
      }
    return buildSummary({
      now: new Date(),
      holder: config.identity,
      credentials: monitor.records.values(),
      referencedBy: (secret) => referrers.get(secret) ?? [],
      held: reconciler.held.values(),
      mismatches: [...monitor.mismatches.values()].flat(),
      guestWatches: guest.watches.status(),
      inventories: guest.ownership.summary(),
    });
  };
  const status = new StatusWriter(shared.client, config.statusConfigMap, summary, logger, options.intervalMs);
  shared.statusChanged.on(() => status.markDirty());
  manager.add({
    name: 'status-report',
    leaderOnly: true,
    start: () => {
      status.markDirty();
      logger.info('caches synced', {
        machines: caches.machines.size,
        harvesterMachines: caches.harvesterMachines.size,
        credentials: caches.credentials.size,
        ...memoryFigures(),
      });
    },
    halt: () => void status.stop({ flush: false }),
    stop: () => status.stop(),
  });
}

/**
 * Heap and resident set in MiB for the log. Without /proc (a chroot, as Rancher's driver jail
 * is) process.memoryUsage() throws, as libuv reads the RSS there: then the heap alone.
 */
function memoryFigures(): { heapUsedMb: number; rssMb?: number } {
  const mb = (bytes: number): number => Math.round(bytes / 1_048_576);
  try {
    const usage = process.memoryUsage();
    return { heapUsedMb: mb(usage.heapUsed), rssMb: mb(usage.rss) };
  } catch {
    return { heapUsedMb: mb(v8.getHeapStatistics().used_heap_size) };
  }
}
