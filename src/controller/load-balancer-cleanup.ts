// The load balancers of a guest cluster deleted as a whole (docs/decisions/0011): once every
// HarvesterMachine of the cluster is gone (Rancher's rm jobs removed the VMs) and no VM of
// it is left on Harvester, the cluster's `workloadType: cluster` load balancers are deleted,
// which releases the IP pool addresses they hold. Harvester v1.8.0 and later delete them
// themselves; there this only deletes what Harvester left. The decision is
// src/harvester/load-balancers.ts; this file does the I/O, the Events and the metrics.
//
// Scope comes from deletion-scope.ts (the same opt-out, never on a scale-down: a cluster
// that is not being deleted is never looked at), the credentials from credential-choice.ts
// (each machine's candidates, falling back only within one Harvester cluster). Where the
// VMs were (namespace, credential) is learned from the HarvesterMachines while they exist
// and kept in memory: a controller restarted after they all went cannot clean up, and says so.
import {
  decideLoadBalancerCleanup,
  describeLoadBalancer,
  type LoadBalancer,
} from '../harvester/load-balancers.js';
import { LABEL_GUEST_CLUSTER_NAME } from '../harvester/labels.js';
import {
  isConflict,
  isCredentialRejected,
  isForbidden,
  isNotFound,
  type KubeClient,
  type ReconcileResult,
} from '../kube/index.js';
import { formatKey, objectKey, type ObjectKey } from '../api/object-key.js';
import { Resources, type KubeObject, type ResourceType } from '../kube/resources.js';
import type { Logger } from '../log/logger.js';
import { cloudProviderClusterName } from '../rancher/chart-values.js';
import { harvesterClusterId } from '../rancher/cloud-credential.js';
import { BY_CLUSTER, clusterIndexKey, type RancherCaches } from './caches.js';
import {
  credentialCandidates,
  findMachinePool,
  formatSecretRef,
  usableCandidates,
  type CredentialCandidate,
} from './credential-choice.js';
import { classifyDeletion } from './deletion-scope.js';
import type { EventRecorder } from './events.js';
import type { FailureReason } from './gate-decision.js';
import type { HarvesterClients } from './harvester-access.js';
import { UNSEEN_CREDENTIAL_HINT } from './constants.js';
import { lbOwnership } from './lb-ownership.js';
import { describeFailure } from './machine-cleanup.js';
import { Counter, type Registry } from 'prom-client';

export const LbReasons = {
  deleted: 'HarvesterLoadBalancersDeleted',
  noneLeft: 'HarvesterLoadBalancersNoneLeft',
  skipped: 'HarvesterLoadBalancerCleanupSkipped',
  refused: 'HarvesterLoadBalancerCleanupRefused',
  failed: 'HarvesterLoadBalancerCleanupFailed',
  abandoned: 'HarvesterLoadBalancerCleanupAbandoned',
} as const;

const WAIT_FOR_VMS_MS = 5_000;
const MAX_RETRY_MS = 60_000;

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

interface Target {
  vmNamespace: string;
  candidates: CredentialCandidate[];
}

interface Pending {
  namespace: string;
  cluster: string;
  /** The cluster's deletionTimestamp (the server's clock), ms. */
  since: number;
  /** What Events are recorded on (the cluster object as last seen). */
  subject: { type: ResourceType; object: KubeObject };
  /** Its cloud provider's --cluster-name from its chart values, while its provisioning Cluster was seen. */
  lbClusterName: string | undefined;
  targets: Map<string, Target>;
  done: Set<string>;
  attempts: number;
  /**
   * After a failed attempt, no new one before this time (ms): the cluster objects keep being
   * updated while they are deleted, and each update reconciles, which must not become a retry.
   */
  notBefore: number;
}

export interface LoadBalancerCleanupDeps {
  caches: RancherCaches;
  harvester: HarvesterClients;
  events: EventRecorder;
  metrics: LoadBalancerMetrics;
  logger: Logger;
  /** After the cluster's deletionTimestamp, how long to keep trying. */
  deadlineMs: number;
  onCredentialRejected: (secretKey: string) => void;
  now?: () => number;
}

type TargetOutcome =
  | { kind: 'done' }
  | { kind: 'wait'; reason: string }
  | { kind: 'failed'; reason: FailureReason; message: string };

export class LoadBalancerCleanup {
  readonly pending = new Map<string, Pending>();
  /** Clusters already reported as opted out (one Event each). */
  private readonly skipped = new Set<string>();
  /**
   * Clusters whose cleanup ended (done, abandoned, or no location known) while their objects
   * are still there being deleted: the objects' last updates (Cluster API's and Rancher's
   * finalizers) must not start a second cleanup, which would find no HarvesterMachine left.
   */
  private readonly finished = new Set<string>();

  constructor(private readonly deps: LoadBalancerCleanupDeps) {}

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  async reconcile(clusterKey: ObjectKey): Promise<ReconcileResult> {
    const key = formatKey(clusterKey);
    const { namespace, name: cluster } = clusterKey;
    const { caches } = this.deps;
    const capi = caches.capiClusters.get(clusterKey);
    const prov = caches.provisioningClusters.get(clusterKey);
    if (capi || prov) {
      const deleting = [prov, capi].find((o) => o?.metadata.deletionTimestamp);
      if (!deleting) {
        this.pending.delete(key);
        this.finished.delete(key);
        return;
      }
      if (this.finished.has(key)) return;
      const scope = classifyDeletion({ machine: deleting, capiCluster: capi, provisioningCluster: prov });
      if (scope.kind === 'opted-out') {
        this.pending.delete(key);
        if (!this.skipped.has(key)) {
          this.skipped.add(key);
          this.deps.metrics.results.inc({ result: 'opted-out', namespace: '' });
          this.record(
            { type: prov ? Resources.provisioningCluster : Resources.capiCluster, object: deleting },
            'Normal',
            LbReasons.skipped,
            `cleanup opted out by harvesterhci.io/skipHarvesterMachineProvisionCleanup on ${scope.on}: the guest cluster's load balancers on Harvester are kept`,
          );
        }
        return;
      }
      if (scope.kind !== 'whole-cluster') return;
      const pending = this.learn(key, namespace, cluster, {
        type: deleting === prov ? Resources.provisioningCluster : Resources.capiCluster,
        object: deleting,
      });
      // Machines still being removed: their events (and the cluster's) bring us back.
      if (this.machinesOf(namespace, cluster).length > 0) return;
      return this.cleanUp(key, pending);
    }
    this.finished.delete(key); // both objects are gone: a new cluster of that name starts afresh
    const pending = this.pending.get(key);
    if (!pending) return;
    return this.cleanUp(key, pending);
  }

  /** The cleanup of this deletion is over, whatever its outcome. */
  private finish(key: string): void {
    this.pending.delete(key);
    this.finished.add(key);
  }

  private machinesOf(namespace: string, cluster: string) {
    return this.deps.caches.harvesterMachines.byIndex(BY_CLUSTER, clusterIndexKey(namespace, cluster));
  }

  /** Records where the cluster's VMs are, from its HarvesterMachines as they are now. */
  private learn(key: string, namespace: string, cluster: string, subject: Pending['subject']): Pending {
    const since = Date.parse(subject.object.metadata.deletionTimestamp ?? '');
    const pending: Pending = this.pending.get(key) ?? {
      namespace,
      cluster,
      since: Number.isNaN(since) ? this.now() : since,
      subject,
      targets: new Map(),
      done: new Set(),
      attempts: 0,
      notBefore: 0,
      lbClusterName: undefined,
    };
    pending.subject = subject;
    const prov = this.deps.caches.provisioningClusters.get(objectKey(namespace, cluster));
    if (prov) pending.lbClusterName = cloudProviderClusterName(prov);
    for (const hm of this.machinesOf(namespace, cluster)) {
      const pool = findMachinePool({
        cluster: prov,
        machineLabels: hm.metadata.labels,
        machineName: hm.metadata.name,
      });
      const candidates = credentialCandidates({ cluster: prov, pool: pool?.pool, harvesterMachine: hm });
      const vmNamespace = hm.spec?.vmNamespace || 'default';
      const id = `${vmNamespace}|${candidates.map((c) => formatSecretRef(c.ref)).join(',')}`;
      if (!pending.targets.has(id)) pending.targets.set(id, { vmNamespace, candidates });
    }
    this.pending.set(key, pending);
    return pending;
  }

  private async cleanUp(key: string, pending: Pending): Promise<ReconcileResult> {
    if (pending.targets.size === 0) {
      this.finish(key);
      this.deps.metrics.results.inc({ result: 'unknown-location', namespace: '' });
      this.record(
        pending.subject,
        'Warning',
        LbReasons.skipped,
        `no HarvesterMachine of guest cluster ${pending.cluster} was seen, so where its VMs were is unknown: its load balancers, if any, are not cleaned up; list them with "harvester-machine leftovers"`,
      );
      return;
    }
    const early = pending.notBefore - this.now();
    if (early > 0) return { requeueAfterMs: early };
    // Before anything is listed on Harvester: the label must be this cluster's alone.
    const ownership = lbOwnership(
      { namespace: pending.namespace, name: pending.cluster, lbClusterName: pending.lbClusterName },
      this.deps.caches.provisioningClusters.list().map((c) => ({
        namespace: c.metadata.namespace ?? '',
        name: c.metadata.name ?? '',
        lbClusterName: cloudProviderClusterName(c),
      })),
    );
    if (!ownership.certain) {
      this.finish(key);
      this.deps.metrics.results.inc({ result: 'refused', namespace: '' });
      this.record(
        pending.subject,
        'Warning',
        LbReasons.refused,
        `the load balancers of guest cluster ${pending.cluster} are not deleted: ${ownership.reason}; check them with "harvester-machine leftovers"`,
      );
      return;
    }
    const waits: string[] = [];
    const failures: Array<{ reason: FailureReason; message: string }> = [];
    for (const [id, target] of pending.targets) {
      if (pending.done.has(id)) continue;
      const outcome = await this.cleanTarget(pending, target);
      if (outcome.kind === 'done') pending.done.add(id);
      else if (outcome.kind === 'wait') waits.push(outcome.reason);
      else failures.push(outcome);
    }
    if (pending.done.size === pending.targets.size) {
      this.finish(key);
      return;
    }
    const deadline = pending.since + this.deps.deadlineMs;
    if (this.now() >= deadline) {
      this.finish(key);
      this.deps.metrics.results.inc({ result: 'abandoned', namespace: '' });
      const why = [...waits, ...failures.map((f) => f.message)].join('; ');
      this.record(
        pending.subject,
        'Warning',
        LbReasons.abandoned,
        `gave up cleaning up the load balancers of guest cluster ${pending.cluster} ${Math.round(this.deps.deadlineMs / 60_000)} min after its deletion: ${why}; list and delete them with "harvester-machine leftovers --delete"`,
      );
      return;
    }
    if (failures.length > 0) {
      pending.attempts++;
      for (const f of failures) {
        this.deps.metrics.failures.inc({ reason: f.reason });
        this.record(pending.subject, 'Warning', LbReasons.failed, `${f.message}; retrying`);
      }
      const backoff = Math.min(MAX_RETRY_MS, 1000 * 2 ** Math.min(pending.attempts - 1, 10));
      const pause = Math.max(0, Math.min(backoff, deadline - this.now()));
      pending.notBefore = this.now() + pause;
      return { requeueAfterMs: pause };
    }
    this.deps.logger.debug('waiting for the guest cluster VMs to go', { cluster: key, waits });
    return { requeueAfterMs: Math.min(WAIT_FOR_VMS_MS, Math.max(0, deadline - this.now())) };
  }

  /** One VM namespace on one Harvester: the candidates in credential-choice's order. */
  private async cleanTarget(pending: Pending, target: Target): Promise<TargetOutcome> {
    const { caches, harvester } = this.deps;
    const resolved = target.candidates.map((c) => ({
      ...c,
      secret: caches.credentials.get(c.ref),
    }));
    const usable = usableCandidates(resolved, (c) =>
      c.secret ? (harvesterClusterId(c.secret) ?? undefined) : null,
    );
    if (usable.length === 0)
      return {
        kind: 'failed',
        reason: 'HarvesterCredentialMissing',
        message: `no Harvester cloud credential Secret found for the load balancers of ${pending.cluster} in ${target.vmNamespace}; tried ${target.candidates.map((c) => `${formatSecretRef(c.ref)} (${c.source})`).join(', ') || 'none configured'} (${UNSEEN_CREDENTIAL_HINT})`,
      };
    const failures: Array<{ reason: FailureReason; message: string }> = [];
    for (const c of usable) {
      const label = `cloud credential ${c.ref.namespace}:${c.ref.name} (${c.source})`;
      const client = c.secret ? harvester.forSecret(c.secret) : undefined;
      if (!client) {
        failures.push({ reason: 'HarvesterCredentialMissing', message: `${label} holds no kubeconfig` });
        continue;
      }
      try {
        return await this.cleanWith(client, pending, target.vmNamespace);
      } catch (err) {
        failures.push(describeFailure(err, label, c.secret, this.now()));
        if (isCredentialRejected(err)) this.deps.onCredentialRejected(formatSecretRef(c.ref));
      }
    }
    const rejected = failures.find((f) => f.reason === 'HarvesterCredentialRejected');
    return {
      kind: 'failed',
      reason: (rejected ?? failures[0])?.reason ?? 'HarvesterError',
      message: failures.map((f) => f.message).join('; '),
    };
  }

  private async cleanWith(client: KubeClient, pending: Pending, namespace: string): Promise<TargetOutcome> {
    const { cluster } = pending;
    const [vms, loadBalancers, serverVersion] = await Promise.all([
      client.list<KubeObject>(Resources.virtualMachine, {
        namespace,
        labelSelector: `${LABEL_GUEST_CLUSTER_NAME}=${cluster}`,
      }),
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
      vms: vms.items,
      loadBalancers,
      serverVersion,
    });
    switch (decision.action) {
      case 'wait':
        return { kind: 'wait', reason: decision.reason };
      case 'refuse':
        this.deps.metrics.results.inc({ result: 'refused', namespace });
        this.record(pending.subject, 'Warning', LbReasons.refused, decision.reason);
        return { kind: 'done' };
      case 'none':
        this.deps.metrics.results.inc({ result: 'none-left', namespace });
        this.record(pending.subject, 'Normal', LbReasons.noneLeft, decision.reason);
        return { kind: 'done' };
      case 'delete': {
        const deleted: string[] = [];
        for (const lb of decision.loadBalancers) {
          if (await deleteLoadBalancer(client, lb)) deleted.push(describeLoadBalancer(lb));
        }
        this.deps.metrics.deleted.inc(deleted.length);
        this.deps.metrics.results.inc({ result: 'deleted', namespace });
        this.record(
          pending.subject,
          'Normal',
          LbReasons.deleted,
          `deleted ${deleted.length} load balancer(s) of guest cluster ${cluster} on Harvester (${deleted.join('; ') || 'none: already gone'}): ${decision.reason}`,
        );
        return { kind: 'done' };
      }
    }
  }

  private record(
    subject: Pending['subject'],
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): void {
    this.deps.events.record(subject.type, subject.object, type, reason, message);
  }
}

async function listLoadBalancers(
  client: KubeClient,
  namespace: string,
): Promise<LoadBalancer[] | 'not-served'> {
  try {
    const list = await client.list<KubeObject>(Resources.loadBalancer, { namespace });
    return list.items;
  } catch (err) {
    // A Harvester without the load balancer add-on serves no such resource.
    if (isNotFound(err)) return 'not-served';
    throw err;
  }
}

async function readServerVersion(client: KubeClient): Promise<string | undefined> {
  try {
    const s = await client.find<KubeObject & { value?: string; default?: string }>(Resources.setting, {
      name: 'server-version',
    });
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
    return await client.delete(
      Resources.loadBalancer,
      { namespace: lb.metadata.namespace ?? '', name: lb.metadata.name },
      lb.metadata.uid ? { preconditions: { uid: lb.metadata.uid } } : {},
    );
  } catch (err) {
    if (isConflict(err)) return false;
    throw err;
  }
}
