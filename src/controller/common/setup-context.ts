// What every controller's setup(manager, shared) is given: the clients, caches, Events, metrics
// and configuration they share, and the two wake-ups between controllers, both enqueue sources
// on the manager: a credential Harvester rejected (the credentials controller probes it again
// at once) and a change the status report shows.
import { objectKey, type ObjectKey } from '../../api/object-key.js';
import type { Controller, EnqueueSource, KubeClient, Manager } from '../../kube/index.js';
import type { Logger } from '../../log/logger.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../rancher/labels.js';
import type { ControllerConfig } from '../process/config.js';
import { rancherCaches, type RancherCaches } from './caches.js';
import { EventRecorder } from './events.js';
import { HarvesterClients } from '../../harvester-access/clients.js';
import { countRequests, type ControllerMetrics } from './metrics.js';
import type { HarvesterMachine } from './types.js';

export type CleanupControllerConfig = Pick<
  ControllerConfig,
  | 'namespaces'
  | 'credentialNamespace'
  | 'credentialLabelSelector'
  | 'credentialFieldSelector'
  | 'hookName'
  | 'gateDeadlineMs'
  | 'probeIntervalMs'
  | 'expiringSoonMs'
  | 'statusConfigMap'
  | 'identity'
> &
  Partial<Pick<ControllerConfig, 'guestVolumes' | 'guestMaxVolumes'>>;

export interface Shared {
  client: KubeClient;
  config: CleanupControllerConfig;
  logger: Logger;
  metrics: ControllerMetrics;
  caches: RancherCaches;
  harvester: HarvesterClients;
  events: EventRecorder;
  /** Secret keys ("namespace/name") of credentials Harvester rejected. */
  rejectedCredentials: EnqueueSource<ObjectKey>;
  /** Something the status summary shows changed. */
  statusChanged: EnqueueSource<void>;
}

export function sharedPieces(
  manager: Manager,
  options: {
    client: KubeClient;
    config: CleanupControllerConfig;
    logger: Logger;
    metrics: ControllerMetrics;
  },
): Shared {
  const { client, config, logger, metrics } = options;
  return {
    ...options,
    caches: rancherCaches(manager, config, (kind, reason) =>
      metrics.droppedObjects.inc({ source: 'rancher', kind, reason }),
    ),
    harvester: new HarvesterClients({ onRequest: countRequests(metrics, 'harvester') }),
    events: new EventRecorder(client, logger, config.identity),
    rejectedCredentials: manager.source<ObjectKey>('rejected-credentials'),
    statusChanged: manager.source<void>('status-changed'),
  };
}

/** The callbacks the components take, as emits into the shared enqueue sources. */
export function wakeUps(shared: Shared): {
  onCredentialRejected: (secretKey: ObjectKey) => void;
  onChange: () => void;
} {
  return {
    onCredentialRejected: (secretKey) => shared.rejectedCredentials.emit(secretKey),
    onChange: () => shared.statusChanged.emit(),
  };
}

/** A controller's queue logger. */
export const queueLogger = (shared: Shared, name: string): { logger: Logger } => ({
  logger: shared.logger.child({ queue: name }),
});

/** A HarvesterMachine's guest cluster, by its Cluster API label. */
export function clusterOf(e: { object: HarvesterMachine }): ObjectKey | undefined {
  const cluster = e.object.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME];
  return cluster ? objectKey(e.object.metadata.namespace, cluster) : undefined;
}

/** The watches of a per-cluster controller: both Cluster kinds, and each HarvesterMachine's cluster. */
export function watchingClusters(controller: Controller, caches: RancherCaches): Controller {
  return controller
    .watch(caches.capiClusters)
    .watch(caches.provisioningClusters)
    .watch(caches.harvesterMachines, clusterOf);
}

/** Drains the Events and closes the Harvester clients once the controllers stopped. */
export function closing(manager: Manager, shared: Shared): void {
  manager.add({
    name: 'shared-clients',
    leaderOnly: true,
    stop: async () => {
      await shared.events.drain();
      shared.harvester.closeAll();
    },
  });
}
