// The volume-cleanup controller: once a guest cluster deleted as a whole has no VM left, the
// host volumes recorded as its own are deleted (volume-cleanup.ts, on the mechanism of
// deleted-cluster-cleanup.ts it shares with the load balancers). One key per cluster.
import type { Manager } from '../../kube/index.js';
import type { GuestVolumeRecord } from '../guest-volumes/setup.js';
import { queueLogger, wakeUps, watchingClusters, type Shared } from '../common/setup-context.js';
import { VolumeCleanup, volumeCleanupMetrics } from './volume-cleanup.js';

export function setup(manager: Manager, shared: Shared, guest: GuestVolumeRecord): void {
  const volumes = new VolumeCleanup({
    caches: shared.caches,
    harvester: shared.harvester,
    events: shared.events,
    metrics: volumeCleanupMetrics(shared.metrics.registry),
    logger: shared.logger.child({ component: 'volume-cleanup' }),
    ownership: guest.ownership,
    deadlineMs: 2 * shared.config.gateDeadlineMs,
    onCredentialRejected: wakeUps(shared).onCredentialRejected,
  });
  watchingClusters(
    manager.controller('volume-cleanup', {
      ...queueLogger(shared, 'volume-cleanup'),
      reconcile: (key) => volumes.reconcile(key),
    }),
    shared.caches,
  );
}
