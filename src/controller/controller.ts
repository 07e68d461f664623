// The cleanup controller on Rancher's local cluster: six controllers on one manager
// (src/kube/manager.ts), their reconcilers, Events, metrics and the status ConfigMap. The
// manager starts every cache, waits until all have synced, then starts the queues: a Machine
// seen before its Cluster would otherwise look orphaned and have its gate released.
import v8 from 'node:v8';
import { keyOf, objectKey, parseKey, type ObjectKey } from '../api/object-key.js';
import { Manager, type KubeClient } from '../kube/index.js';
import type { Logger } from '../log/logger.js';
import {
  BY_CLUSTER,
  BY_INFRASTRUCTURE,
  clusterIndexKey,
  rancherCaches,
  type RancherCaches,
} from './shared/caches.js';
import type { ControllerConfig } from './process/config.js';
import { CAPI_LABEL_CLUSTER_NAME, LABEL_RKE_CAPI_MACHINE } from '../rancher/labels.js';
import { CredentialMonitor } from './credentials/credential-monitor.js';
import { formatSecretRef } from './shared/credential-choice.js';
import { EventRecorder } from './shared/events.js';
import { HarvesterClients, KubeconfigClients } from './shared/harvester-access.js';
import { GUEST_MAX_RESPONSE_BYTES, GuestWatches } from './guest-volumes/guest-watches.js';
import { VolumeOwnership, ownershipMetrics } from './guest-volumes/volume-ownership.js';
import { VolumeCleanup, volumeCleanupMetrics } from './deleted-clusters/volume-cleanup.js';
import { LoadBalancerCleanup, loadBalancerMetrics } from './load-balancers/load-balancer-cleanup.js';
import { MachineReconciler } from './gate/machine-reconciler.js';
import {
  controllerMetrics,
  countRequests,
  workQueueMetrics,
  type ControllerMetrics,
} from './shared/metrics.js';
import { collectReferences } from './credentials/references.js';
import { buildSummary, StatusWriter } from './status/status-report.js';
import type { HarvesterMachine } from './shared/types.js';

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

export interface CleanupControllerOptions {
  client: KubeClient;
  config: CleanupControllerConfig;
  logger: Logger;
  metrics?: ControllerMetrics;
  /** Machines reconciled at once (each waits on Harvester). */
  concurrency?: number;
  statusIntervalMs?: number;
}

export class CleanupController {
  readonly manager: Manager;
  readonly caches: RancherCaches;
  readonly metrics: ControllerMetrics;
  readonly reconciler: MachineReconciler;
  readonly monitor: CredentialMonitor;
  readonly loadBalancers: LoadBalancerCleanup;
  readonly ownership: VolumeOwnership;
  readonly volumes: VolumeCleanup;
  readonly guestWatches: GuestWatches;
  private readonly queues: ReturnType<CleanupController['declare']>;
  private readonly harvester: HarvesterClients;
  private readonly guestClients: KubeconfigClients;
  private readonly status: StatusWriter;
  private readonly events: EventRecorder;

  constructor(private readonly options: CleanupControllerOptions) {
    const { client, config, logger } = options;
    const metrics = (this.metrics = options.metrics ?? controllerMetrics());
    this.harvester = new HarvesterClients({ onRequest: countRequests(metrics, 'harvester') });
    this.manager = new Manager({
      client,
      logger,
      queueDefaults: { baseDelayMs: 500, maxDelayMs: 30_000, concurrency: 2 },
      metricsFor: (name) => workQueueMetrics(metrics, name),
      onReconcileError: (queue) => metrics.reconcileErrors.inc({ queue }),
    });
    this.caches = rancherCaches(this.manager, config, (kind, reason) =>
      metrics.droppedObjects.inc({ source: 'rancher', kind, reason }),
    );
    const events = (this.events = new EventRecorder(client, logger, config.identity));
    this.status = new StatusWriter(
      client,
      config.statusConfigMap,
      () => this.summary(),
      logger,
      options.statusIntervalMs,
    );
    const onChange = (): void => this.status.markDirty();
    const onCredentialRejected = (secret: string): void => {
      this.monitor.markRejected(secret);
      this.queues.credentials.enqueue(parseKey(secret));
    };
    const shared = { caches: this.caches, harvester: this.harvester, events, logger };
    this.monitor = new CredentialMonitor({
      ...shared,
      metrics,
      probeIntervalMs: config.probeIntervalMs,
      expiringSoonMs: config.expiringSoonMs,
      enqueueClusters: (keys) => keys.forEach((k) => this.queues.clusters.enqueue(parseKey(k))),
      enqueueCredential: (key) => this.queues.credentials.enqueue(parseKey(key)),
      onChange,
    });
    const guestMetrics = ownershipMetrics(metrics.registry);
    const guestDropped = (reason: string): void =>
      metrics.droppedObjects.inc({ source: 'guest', kind: 'PersistentVolume', reason });
    // A guest's apiserver is its admins' (tenants'): a small answer cap (Harvester's and Rancher's clients keep 64 MiB).
    this.guestClients = new KubeconfigClients({
      onRequest: () => guestMetrics.guestRequests.inc(),
      maxResponseBytes: GUEST_MAX_RESPONSE_BYTES,
    });
    this.guestWatches = new GuestWatches({
      rancher: client,
      clients: this.guestClients,
      ...(config.guestMaxVolumes !== undefined ? { maxVolumes: config.guestMaxVolumes } : {}),
      onDropped: guestDropped,
      logger: logger.child({ component: 'guest-watches' }),
      onChange: (cluster) => this.queues.guestVolumes.enqueue(cluster),
      onState: (cluster, state, detail) => {
        this.ownership.onWatchState(cluster, state, detail);
        onChange();
      },
    });
    this.ownership = new VolumeOwnership({
      ...shared,
      watches: this.guestWatches,
      metrics: guestMetrics,
      logger: logger.child({ component: 'guest-volumes' }),
      mode: config.guestVolumes ?? 'watch',
      onCredentialRejected,
      onDropped: guestDropped,
    });
    this.reconciler = new MachineReconciler({
      ...shared,
      client,
      metrics,
      hookName: config.hookName,
      gateDeadlineMs: config.gateDeadlineMs,
      onCredentialRejected,
      onChange,
      lastInventory: async (cluster, timeoutMs) => {
        await this.ownership.finalInventory(cluster, timeoutMs);
        onChange();
      },
    });
    this.loadBalancers = new LoadBalancerCleanup({
      ...shared,
      metrics: loadBalancerMetrics(metrics.registry),
      logger: logger.child({ component: 'load-balancer-cleanup' }),
      // The VMs go only after every gate of the cluster was released (at the latest at the gate deadline).
      deadlineMs: 2 * config.gateDeadlineMs,
      onCredentialRejected,
    });
    this.volumes = new VolumeCleanup({
      ...shared,
      metrics: volumeCleanupMetrics(metrics.registry),
      logger: logger.child({ component: 'volume-cleanup' }),
      ownership: this.ownership,
      deadlineMs: 2 * config.gateDeadlineMs,
      onCredentialRejected,
    });
    this.queues = this.declare();
  }

  /** The wiring: which change of which cache wakes which controller. */
  private declare() {
    const { caches, manager } = this;
    const queue = (name: string) => ({ logger: this.options.logger.child({ queue: name }) });
    const clusterOf = (e: { object: HarvesterMachine }) => this.clusterOf(e.object);
    const machines = manager
      .controller('machines', {
        ...queue('machines'),
        concurrency: this.options.concurrency ?? 8,
        reconcile: (key) => this.reconciler.reconcile(key),
      })
      .watch(caches.machines)
      .watch(caches.capiClusters, (e) => this.machinesOf(keyOf(e.object)))
      .watch(caches.provisioningClusters, (e) => this.machinesOf(keyOf(e.object)))
      .watch(caches.harvesterMachines, (e) => this.machinesOfHarvesterMachine(e.object))
      // A renewed credential: retry every held gate now rather than at its next backoff.
      .watch(caches.credentials, () => [...this.reconciler.held.keys()].map(parseKey));
    const credentials = manager
      .controller('credentials', {
        ...queue('credentials'),
        reconcile: (key) => this.monitor.reconcileCredential(key),
      })
      .watch(caches.credentials);
    const clusters = manager
      .controller('clusters', {
        ...queue('clusters'),
        reconcile: (key) => Promise.resolve(this.monitor.reconcileCluster(key)),
      })
      .watch(caches.capiClusters)
      .watch(caches.provisioningClusters)
      .watch(caches.harvesterMachines, clusterOf);
    const loadBalancers = manager
      .controller('load-balancers', {
        ...queue('load-balancers'),
        reconcile: (key) => this.loadBalancers.reconcile(key),
      })
      .watch(caches.capiClusters)
      .watch(caches.provisioningClusters)
      .watch(caches.harvesterMachines, clusterOf);
    // The guests' own PV watches feed it too (GuestWatches.onChange).
    const guestVolumes = manager
      .controller('guest-volumes', {
        ...queue('guest-volumes'),
        reconcile: (key) => this.ownership.reconcile(key),
      })
      .watch(caches.capiClusters)
      .watch(caches.provisioningClusters)
      .watch(caches.harvesterMachines, clusterOf);
    const volumeCleanup = manager
      .controller('volume-cleanup', {
        ...queue('volume-cleanup'),
        reconcile: (key) => this.volumes.reconcile(key),
      })
      .watch(caches.capiClusters)
      .watch(caches.provisioningClusters)
      .watch(caches.harvesterMachines, clusterOf);
    return { machines, credentials, clusters, loadBalancers, guestVolumes, volumeCleanup };
  }

  /** A HarvesterMachine's CAPI Machine: by label, by owner, else whichever Machine points at it. */
  private machinesOfHarvesterMachine(hm: HarvesterMachine): ObjectKey[] {
    const ns = hm.metadata.namespace ?? '';
    const owner = hm.metadata.ownerReferences?.find((o) => o.kind === 'Machine')?.name;
    const machine = hm.metadata.labels?.[LABEL_RKE_CAPI_MACHINE] ?? owner;
    if (machine) return [objectKey(ns, machine)];
    return this.caches.machines.byIndex(BY_INFRASTRUCTURE, clusterIndexKey(ns, hm.metadata.name)).map(keyOf);
  }

  private clusterOf(hm: HarvesterMachine): ObjectKey | undefined {
    const cluster = hm.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME];
    return cluster ? objectKey(hm.metadata.namespace, cluster) : undefined;
  }

  private machinesOf(cluster: ObjectKey): ObjectKey[] {
    return this.caches.machines
      .byIndex(BY_CLUSTER, clusterIndexKey(cluster.namespace, cluster.name))
      .map(keyOf);
  }

  private summary() {
    // Grouped once: with thousands of machines, a pass over every reference per credential adds up.
    const referrers = new Map<string, string[]>();
    for (const c of collectReferences(
      this.caches.provisioningClusters.list(),
      this.caches.harvesterMachines.list(),
    ))
      for (const r of c.references) {
        const secret = formatSecretRef(r.credential);
        const list = referrers.get(secret);
        if (list) list.push(r.referrer);
        else referrers.set(secret, [r.referrer]);
      }
    return buildSummary({
      now: new Date(),
      holder: this.options.config.identity,
      credentials: this.monitor.records.values(),
      referencedBy: (secret) => referrers.get(secret) ?? [],
      held: this.reconciler.held.values(),
      mismatches: [...this.monitor.mismatches.values()].flat(),
      guestWatches: this.guestWatches.status(),
      inventories: this.ownership.summary(),
    });
  }

  get ready(): boolean {
    return this.manager.synced;
  }

  /** Starts the caches, waits for them all, then reconciles everything once. */
  async start(): Promise<void> {
    await this.manager.start();
    if (!this.manager.synced) return;
    this.status.markDirty();
    const { caches } = this;
    this.options.logger.info('caches synced', {
      machines: caches.machines.size,
      harvesterMachines: caches.harvesterMachines.size,
      credentials: caches.credentials.size,
      ...memoryFigures(),
    });
  }

  /**
   * Stops acting at once (leadership lost): no queued or retried work of any controller starts
   * any more and the status summary is not written again. What is in flight is left to the
   * process exit that follows; stop() still releases everything.
   */
  halt(): void {
    this.manager.halt();
    void this.guestWatches.stopAll();
    void this.status.stop({ flush: false });
  }

  /** Resolves when no work is queued or running (tests, benchmarks). */
  async idle(): Promise<void> {
    // A credential probe runs beside its queue and brings its key back when it answers.
    do {
      await this.monitor.probesSettled();
      await this.manager.idle();
    } while (this.monitor.probing);
  }

  async stop(): Promise<void> {
    this.monitor.stop();
    await this.manager.stop();
    await this.guestWatches.stopAll();
    await this.events.drain();
    await this.status.stop();
    this.harvester.closeAll();
    this.guestClients.closeAll();
  }
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
