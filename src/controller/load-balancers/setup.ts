// The load-balancers controller: once a guest cluster deleted as a whole has no VM left, its
// load balancers on Harvester are deleted (load-balancer-cleanup.ts). One key per cluster.
import type { Manager } from '../../kube/index.js';
import { queueLogger, wakeUps, watchingClusters, type Shared } from '../common/setup-context.js';
import { LoadBalancerCleanup, loadBalancerMetrics } from './load-balancer-cleanup.js';

export function setup(manager: Manager, shared: Shared): void {
  const loadBalancers = new LoadBalancerCleanup({
    caches: shared.caches,
    harvester: shared.harvester,
    events: shared.events,
    metrics: loadBalancerMetrics(shared.metrics.registry),
    logger: shared.logger.child({ component: 'load-balancer-cleanup' }),
    // The VMs go only after every gate of the cluster was released (at the latest at the gate deadline).
    deadlineMs: 2 * shared.config.gateDeadlineMs,
    onCredentialRejected: wakeUps(shared).onCredentialRejected,
  });
  watchingClusters(
    manager.controller('load-balancers', {
      ...queueLogger(shared, 'load-balancers'),
      reconcile: (key) => loadBalancers.reconcile(key),
    }),
    shared.caches,
  );
}
