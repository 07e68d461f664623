// The guest-volumes controller: while a guest cluster lives, the host volumes its PVs name are
// recorded as its own on Harvester (volume-ownership.ts), fed by the Rancher caches and by one
// PV watch per guest cluster (guest-watches.ts), whose changes reach it as an enqueue source.
// The record is made before any controller is declared: the gate asks it for a cluster's last
// inventory, the volume cleanup reads it, the status report shows it.
import type { ObjectKey } from '../../api/object-key.js';
import type { EnqueueSource, Manager } from '../../kube/index.js';
import { KubeconfigClients } from '../../harvester-access/clients.js';
import { queueLogger, wakeUps, watchingClusters, type Shared } from '../common/setup-context.js';
import { GUEST_MAX_RESPONSE_BYTES, GuestWatches } from './guest-watches.js';
import { VolumeOwnership, ownershipMetrics } from './volume-ownership.js';

export interface GuestVolumeRecord {
  ownership: VolumeOwnership;
  watches: GuestWatches;
  /** Guest clusters whose PVs changed (their watches saw it). */
  changes: EnqueueSource;
}

/** The guest clusters' PV watches and the ownership record, with their metrics. */
export function guestVolumeRecord(manager: Manager, shared: Shared): GuestVolumeRecord {
  const { config, metrics } = shared;
  const { onChange, onCredentialRejected } = wakeUps(shared);
  const changes = manager.source<ObjectKey>('guest-volume-changes');
  const guestMetrics = ownershipMetrics(metrics.registry);
  const guestDropped = (reason: string): void =>
    metrics.droppedObjects.inc({ source: 'guest', kind: 'PersistentVolume', reason });
  // A guest's apiserver is its admins' (tenants'): a small answer cap (Harvester's and Rancher's clients keep 64 MiB).
  const guestClients = new KubeconfigClients({
    onRequest: () => guestMetrics.guestRequests.inc(),
    maxResponseBytes: GUEST_MAX_RESPONSE_BYTES,
  });
  const watches = new GuestWatches({
    rancher: shared.client,
    clients: guestClients,
    ...(config.guestMaxVolumes !== undefined ? { maxVolumes: config.guestMaxVolumes } : {}),
    onDropped: guestDropped,
    logger: shared.logger.child({ component: 'guest-watches' }),
    onChange: (cluster) => changes.emit(cluster),
    onState: (cluster, state, detail) => {
      ownership.onWatchState(cluster, state, detail);
      onChange();
    },
  });
  const ownership = new VolumeOwnership({
    caches: shared.caches,
    harvester: shared.harvester,
    events: shared.events,
    watches,
    metrics: guestMetrics,
    logger: shared.logger.child({ component: 'guest-volumes' }),
    mode: config.guestVolumes ?? 'watch',
    onCredentialRejected,
    onDropped: guestDropped,
  });
  manager.add({
    name: 'guest-watches',
    leaderOnly: true,
    halt: () => void watches.stopAll(),
    stop: async () => {
      await watches.stopAll();
      guestClients.closeAll();
    },
  });
  return { ownership, watches, changes };
}

export function setup(manager: Manager, shared: Shared, guest: GuestVolumeRecord): void {
  watchingClusters(
    manager.controller('guest-volumes', {
      ...queueLogger(shared, 'guest-volumes'),
      reconcile: (key) => guest.ownership.reconcile(key),
    }),
    shared.caches,
  ).watch(guest.changes);
}
