import { formatKey, objectKey, type ObjectKey } from '../../api/object-key.js';
import type { KubeClient, ReconcileResult } from '../../kube/index.js';
import { Resources, type KubeObject, type ResourceType } from '../../kube/resources.js';
import type { Logger } from '../../log/logger.js';
import { BY_CLUSTER, clusterIndexKey, type RancherCaches } from '../common/caches.js';
import { learnTargets, withTargetClient, type ClusterTarget } from '../common/cluster-targets.js';
import { classifyDeletion } from '../gate/deletion-scope.js';
import type { EventRecorder } from '../common/events.js';
import type { FailureReason } from '../gate/gate-decision.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import type { ProvisioningCluster } from '../common/types.js';
import type { Counter } from 'prom-client';

const MAX_RETRY_MS = 60_000;
const WAIT_FOR_VMS_MS = 5_000;

export interface DeletedCluster {
  namespace: string;
  cluster: string;
  /** The cluster's deletionTimestamp (the server's clock), ms. */
  since: number;
  /** What Events are recorded on (the cluster object as last seen). */
  subject: { type: ResourceType; object: KubeObject };
  /** Its provisioning Cluster as last seen (slimmed by the cache). */
  provisioningCluster: ProvisioningCluster | undefined;
  targets: Map<string, ClusterTarget>;
  done: Set<string>;
  attempts: number;
  /**
   * After a failed attempt, no new one before this time (ms): the cluster objects keep being
   * updated while they are deleted, and each update reconciles, which must not become a retry.
   */
  notBefore: number;
}

export type TargetOutcome =
  | { kind: 'done' }
  | { kind: 'wait'; reason: string }
  | { kind: 'failed'; reason: FailureReason; message: string };

/** One kind of leftover: its words, Event reasons, metrics and what it does per VM namespace. */
export interface LeftoverKind {
  /** "load balancers", "volumes": in Events. */
  what: string;
  reasons: { skipped: string; refused: string; failed: string; abandoned: string };
  metrics: {
    results: Counter<'result' | 'namespace'>;
    failures: Counter<'reason'>;
  };
  /** Before anything is listed on Harvester: a reason for a Warning and no cleanup at all. */
  refuse?(cluster: DeletedCluster): string | undefined;
  /** The cleanup in one VM namespace with a client of a usable credential; throws KubeErrors. */
  cleanWith(client: KubeClient, cluster: DeletedCluster, namespace: string): Promise<TargetOutcome>;
}

export interface DeletedClusterCleanupDeps {
  caches: RancherCaches;
  harvester: HarvesterClients;
  events: EventRecorder;
  logger: Logger;
  /** After the cluster's deletionTimestamp, how long to keep trying. */
  deadlineMs: number;
  onCredentialRejected: (secretKey: ObjectKey) => void;
  now?: () => number;
}

/**
 * What a guest cluster deleted as a whole leaves on Harvester once its last VM is gone, cleaned
 * up by one mechanism for every kind of leftover (its load balancers, its
 * host volumes). Each kind says what to do in one VM namespace on one
 * Harvester (`cleanWith`); this class owns what they share:
 * - scope (deletion-scope.ts, the gate's): only a cluster being deleted is ever looked at, so a
 *   scale-down, a replacement or a Machine deleted by hand never touches anything; the opt-out
 *   `harvesterhci.io/skipHarvesterMachineProvisionCleanup` keeps everything (one Event);
 * - where: while the cluster is deleted, each HarvesterMachine's VM namespace and credential
 *   candidates (credential-choice.ts), kept in memory (cluster-targets.ts); the cleanup starts
 *   once no HarvesterMachine of the cluster is left and runs once per deletion;
 * - failures: retried with backoff (1 s … 60 s), a Warning each time (folded by the recorder),
 *   until the deadline after the cluster's deletionTimestamp, then abandoned with a Warning
 *   naming `harvester-machine leftovers --delete`.
 */
export class DeletedClusterCleanup {
  readonly pending = new Map<string, DeletedCluster>();
  /** Clusters already reported as opted out (one Event each). */
  private readonly skipped = new Set<string>();
  /**
   * Clusters whose cleanup ended (done, abandoned, or no location known) while their objects
   * are still there being deleted: the objects' last updates (Cluster API's and Rancher's
   * finalizers) must not start a second cleanup, which would find no HarvesterMachine left.
   */
  private readonly finished = new Set<string>();

  constructor(
    private readonly deps: DeletedClusterCleanupDeps,
    private readonly kind: LeftoverKind,
  ) {}

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
          this.kind.metrics.results.inc({ result: 'opted-out', namespace: '' });
          this.record(
            { type: prov ? Resources.provisioningCluster : Resources.capiCluster, object: deleting },
            'Normal',
            this.kind.reasons.skipped,
            `cleanup opted out by harvesterhci.io/skipHarvesterMachineProvisionCleanup on ${scope.on}: the guest cluster's ${this.kind.what} on Harvester are kept`,
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
  private learn(
    key: string,
    namespace: string,
    cluster: string,
    subject: DeletedCluster['subject'],
  ): DeletedCluster {
    const since = Date.parse(subject.object.metadata.deletionTimestamp ?? '');
    const pending: DeletedCluster = this.pending.get(key) ?? {
      namespace,
      cluster,
      since: Number.isNaN(since) ? this.now() : since,
      subject,
      provisioningCluster: undefined,
      targets: new Map(),
      done: new Set(),
      attempts: 0,
      notBefore: 0,
    };
    pending.subject = subject;
    const prov = this.deps.caches.provisioningClusters.get(objectKey(namespace, cluster));
    if (prov) pending.provisioningCluster = prov;
    learnTargets(this.deps.caches, namespace, cluster, pending.targets);
    this.pending.set(key, pending);
    return pending;
  }

  private async cleanUp(key: string, pending: DeletedCluster): Promise<ReconcileResult> {
    const { kind } = this;
    if (pending.targets.size === 0) {
      this.finish(key);
      kind.metrics.results.inc({ result: 'unknown-location', namespace: '' });
      this.record(
        pending.subject,
        'Warning',
        kind.reasons.skipped,
        `no HarvesterMachine of guest cluster ${pending.cluster} was seen, so where its VMs were is unknown: its ${kind.what}, if any, are not cleaned up; list them with "harvester-machine leftovers"`,
      );
      return;
    }
    const early = pending.notBefore - this.now();
    if (early > 0) return { requeueAfterMs: early };
    const refusal = kind.refuse?.(pending);
    if (refusal !== undefined) {
      this.finish(key);
      kind.metrics.results.inc({ result: 'refused', namespace: '' });
      this.record(pending.subject, 'Warning', kind.reasons.refused, refusal);
      return;
    }
    const waits: string[] = [];
    const failures: Array<{ reason: FailureReason; message: string }> = [];
    for (const [id, target] of pending.targets) {
      if (pending.done.has(id)) continue;
      const outcome = await withTargetClient(
        { ...this.deps, now: this.now() },
        target,
        `the ${kind.what} of ${pending.cluster}`,
        (client) => kind.cleanWith(client, pending, target.vmNamespace),
      );
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
      kind.metrics.results.inc({ result: 'abandoned', namespace: '' });
      const why = [...waits, ...failures.map((f) => f.message)].join('; ');
      this.record(
        pending.subject,
        'Warning',
        kind.reasons.abandoned,
        `gave up cleaning up the ${kind.what} of guest cluster ${pending.cluster} ${Math.round(this.deps.deadlineMs / 60_000)} min after its deletion: ${why}; list and delete them with "harvester-machine leftovers --delete"`,
      );
      return;
    }
    if (failures.length > 0) {
      pending.attempts++;
      for (const f of failures) {
        kind.metrics.failures.inc({ reason: f.reason });
        this.record(pending.subject, 'Warning', kind.reasons.failed, `${f.message}; retrying`);
      }
      const backoff = Math.min(MAX_RETRY_MS, 1000 * 2 ** Math.min(pending.attempts - 1, 10));
      const pause = Math.max(0, Math.min(backoff, deadline - this.now()));
      pending.notBefore = this.now() + pause;
      return { requeueAfterMs: pause };
    }
    this.deps.logger.debug('waiting for the guest cluster VMs to go', { cluster: key, waits });
    return { requeueAfterMs: Math.min(WAIT_FOR_VMS_MS, Math.max(0, deadline - this.now())) };
  }

  record(
    subject: DeletedCluster['subject'],
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): void {
    this.deps.events.record(subject.type, subject.object, type, reason, message);
  }
}
