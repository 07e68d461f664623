// The credentials controllers: each Harvester cloud credential's health ("credentials", one
// key per Secret), and per guest cluster the report of machines or pools left on a bad
// credential ("clusters"). A credential another controller saw rejected is probed again at once.
import type { Manager } from '../../kube/index.js';
import { queueLogger, wakeUps, watchingClusters, type Shared } from '../common/setup-context.js';
import { CredentialMonitor } from './credential-monitor.js';

export function setup(manager: Manager, shared: Shared): { monitor: CredentialMonitor } {
  const { caches, config } = shared;
  const credentials = manager
    .controller('credentials', {
      ...queueLogger(shared, 'credentials'),
      reconcile: (key) => monitor.reconcileCredential(key),
    })
    .watch(caches.credentials);
  const clusters = watchingClusters(
    manager.controller('clusters', {
      ...queueLogger(shared, 'clusters'),
      reconcile: (key) => Promise.resolve(monitor.reconcileCluster(key)),
    }),
    caches,
  );
  const monitor = new CredentialMonitor({
    caches,
    harvester: shared.harvester,
    events: shared.events,
    logger: shared.logger,
    metrics: shared.metrics,
    probeIntervalMs: config.probeIntervalMs,
    expiringSoonMs: config.expiringSoonMs,
    enqueueClusters: (keys) => keys.forEach((k) => clusters.enqueue(k)),
    enqueueCredential: (key) => credentials.enqueue(key),
    onChange: wakeUps(shared).onChange,
  });
  shared.rejectedCredentials.on((secret) => monitor.markRejected(secret));
  credentials.watch(shared.rejectedCredentials);
  manager.add({ name: 'credential-probes', leaderOnly: true, stopping: () => monitor.stop() });
  return { monitor };
}
