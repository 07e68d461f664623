import {
  decideLoadBalancerCleanup,
  describeLoadBalancer,
  type LoadBalancer,
} from '../../harvester/load-balancers.js';
import { LABEL_GUEST_CLUSTER_NAME } from '../../harvester/labels.js';
import {
  isConflict,
  isForbidden,
  isNotFound,
  type KubeClient,
  type ReconcileResult,
} from '../../kube/index.js';
import type { ObjectKey } from '../../api/object-key.js';
import type { Logger } from '../../log/logger.js';
import { cloudProviderClusterName } from '../../rancher/chart-values.js';
import type { RancherCaches } from '../common/caches.js';
import {
  DeletedClusterCleanup,
  type DeletedCluster,
  type LeftoverKind,
  type TargetOutcome,
} from '../deleted-clusters/deleted-cluster-cleanup.js';
import type { EventRecorder } from '../common/events.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { HarvesterApi } from '../../harvester-access/harvester-api.js';
import { lbOwnership } from './lb-ownership.js';
import { Counter, type Registry } from 'prom-client';

export const LbReasons = {
  deleted: 'HarvesterLoadBalancersDeleted',
  noneLeft: 'HarvesterLoadBalancersNoneLeft',
  skipped: 'HarvesterLoadBalancerCleanupSkipped',
  refused: 'HarvesterLoadBalancerCleanupRefused',
  failed: 'HarvesterLoadBalancerCleanupFailed',
  abandoned: 'HarvesterLoadBalancerCleanupAbandoned',
} as const;

export function loadBalancerMetrics(registry: Registry) {
  return {
    results: new Counter({
      name: 'harvester_machine_lb_cleanups_total',
      help: 'Load balancer cleanups of deleted guest clusters, by result (deleted, none-left, opted-out, refused, abandoned, unknown-location) and Harvester namespace.',
      labelNames: ['result', 'namespace'] as const,
      registers: [registry],
    }),
    deleted: new Counter({
      name: 'harvester_machine_lb_deleted_total',
      help: 'Load balancers of deleted guest clusters deleted by this controller.',
      registers: [registry],
    }),
    failures: new Counter({
      name: 'harvester_machine_lb_cleanup_failures_total',
      help: 'Failed load balancer cleanup attempts, by reason.',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
  };
}
export type LoadBalancerMetrics = ReturnType<typeof loadBalancerMetrics>;

export interface LoadBalancerCleanupDeps {
  caches: RancherCaches;
  harvester: HarvesterClients;
  events: EventRecorder;
  metrics: LoadBalancerMetrics;
  logger: Logger;
  /** After the cluster's deletionTimestamp, how long to keep trying. */
  deadlineMs: number;
  onCredentialRejected: (secretKey: ObjectKey) => void;
  now?: () => number;
}

/**
 * The load balancers of a guest cluster deleted as a whole: once every
 * HarvesterMachine of the cluster is gone (Rancher's rm jobs removed the VMs) and no VM of
 * it is left on Harvester, the cluster's `workloadType: cluster` load balancers are deleted,
 * which releases the IP pool addresses they hold. Harvester v1.8.0 and later delete them
 * themselves; there this only deletes what Harvester left. The decision is
 * src/harvester/load-balancers.ts; this file does the I/O, the Events and the metrics.
 *
 * Scope, opt-out, credentials, retries and the deadline are deleted-cluster-cleanup.ts's, shared
 * with the volume cleanup. Where the VMs were (namespace, credential) is learned from the
 * HarvesterMachines while they exist and kept in memory: a controller restarted after they all
 * went cannot clean up, and says so.
 */
export class LoadBalancerCleanup {
  private readonly cleanup: DeletedClusterCleanup;

  constructor(private readonly deps: LoadBalancerCleanupDeps) {
    const kind: LeftoverKind = {
      what: 'load balancers',
      reasons: LbReasons,
      metrics: deps.metrics,
      refuse: (c) => this.refuse(c),
      cleanWith: (client, c, namespace) => this.cleanWith(client, c, namespace),
    };
    this.cleanup = new DeletedClusterCleanup(deps, kind);
  }

  get pending(): ReadonlyMap<string, DeletedCluster> {
    return this.cleanup.pending;
  }

  reconcile(clusterKey: ObjectKey): Promise<ReconcileResult> {
    return this.cleanup.reconcile(clusterKey);
  }

  /** Before anything is listed on Harvester: the label must be this cluster's alone. */
  private refuse(pending: DeletedCluster): string | undefined {
    const prov = pending.provisioningCluster;
    const ownership = lbOwnership(
      {
        namespace: pending.namespace,
        name: pending.cluster,
        lbClusterName: prov ? cloudProviderClusterName(prov) : undefined,
      },
      this.deps.caches.provisioningClusters.list().map((c) => ({
        namespace: c.metadata.namespace ?? '',
        name: c.metadata.name ?? '',
        lbClusterName: cloudProviderClusterName(c),
      })),
    );
    return ownership.certain
      ? undefined
      : `the load balancers of guest cluster ${pending.cluster} are not deleted: ${ownership.reason}; check them with "harvester-machine leftovers"`;
  }

  private async cleanWith(
    client: KubeClient,
    pending: DeletedCluster,
    namespace: string,
  ): Promise<TargetOutcome> {
    const { cluster } = pending;
    const [vms, loadBalancers, serverVersion] = await Promise.all([
      new HarvesterApi(client).listVms(namespace, `${LABEL_GUEST_CLUSTER_NAME}=${cluster}`),
      listLoadBalancers(client, namespace),
      readServerVersion(client),
    ]);
    if (loadBalancers === 'not-served') {
      this.deps.metrics.results.inc({ result: 'none-left', namespace });
      this.deps.logger.info('Harvester serves no load balancers', { cluster, namespace });
      return { kind: 'done' };
    }
    const decision = decideLoadBalancerCleanup({
      cluster,
      namespace,
      vms,
      loadBalancers,
      serverVersion,
    });
    switch (decision.action) {
      case 'wait':
        return { kind: 'wait', reason: decision.reason };
      case 'refuse':
        this.deps.metrics.results.inc({ result: 'refused', namespace });
        this.cleanup.record(pending.subject, 'Warning', LbReasons.refused, decision.reason);
        return { kind: 'done' };
      case 'none':
        this.deps.metrics.results.inc({ result: 'none-left', namespace });
        this.cleanup.record(pending.subject, 'Normal', LbReasons.noneLeft, decision.reason);
        return { kind: 'done' };
      case 'delete': {
        const deleted: string[] = [];
        for (const lb of decision.loadBalancers) {
          if (await deleteLoadBalancer(client, lb)) deleted.push(describeLoadBalancer(lb));
        }
        this.deps.metrics.deleted.inc(deleted.length);
        this.deps.metrics.results.inc({ result: 'deleted', namespace });
        this.cleanup.record(
          pending.subject,
          'Normal',
          LbReasons.deleted,
          `deleted ${deleted.length} load balancer(s) of guest cluster ${cluster} on Harvester (${deleted.join('; ') || 'none: already gone'}): ${decision.reason}`,
        );
        return { kind: 'done' };
      }
    }
  }
}

async function listLoadBalancers(
  client: KubeClient,
  namespace: string,
): Promise<LoadBalancer[] | 'not-served'> {
  try {
    return await new HarvesterApi(client).listLoadBalancers(namespace);
  } catch (err) {
    // A Harvester without the load balancer add-on serves no such resource.
    if (isNotFound(err)) return 'not-served';
    throw err;
  }
}

async function readServerVersion(client: KubeClient): Promise<string | undefined> {
  try {
    const s = await new HarvesterApi(client).findSetting('server-version');
    return s?.value || s?.default || undefined;
  } catch (err) {
    // Not allowed to read it: decided as for an unknown version (delete what is left).
    if (isForbidden(err)) return undefined;
    throw err;
  }
}

/** Deletes the load balancer that was listed (uid precondition); false when it was gone or replaced. */
async function deleteLoadBalancer(client: KubeClient, lb: LoadBalancer): Promise<boolean> {
  try {
    const { namespace, name, uid } = lb.metadata;
    return await new HarvesterApi(client).deleteLoadBalancer(namespace ?? '', name, uid);
  } catch (err) {
    if (isConflict(err)) return false;
    throw err;
  }
}
