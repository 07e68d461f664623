// Wiring: informers on Rancher's local cluster, one work queue per kind (machines,
// credentials, clusters), the reconcilers, Events, metrics and the status ConfigMap.
// Nothing is decided before every cache has synced: a Machine seen before its Cluster
// would otherwise look orphaned and have its gate released.
import v8 from 'node:v8';
import { WorkQueue, type InformerEvent, type KubeClient } from '../kube/index.js';
import type { KubeObject } from '../kube/resources.js';
import type { Logger } from '../log/logger.js';
import { createCaches, keyOf, type RancherCaches } from './caches.js';
import type { ControllerConfig } from './config.js';
import { CAPI_LABEL_CLUSTER_NAME, LABEL_RKE_CAPI_MACHINE } from '../rancher/labels.js';
import { CredentialMonitor } from './credential-monitor.js';
import { formatSecretRef } from './credential-choice.js';
import { EventRecorder } from './events.js';
import { HarvesterClients } from './harvester-access.js';
import { LoadBalancerCleanup, loadBalancerMetrics } from './load-balancer-cleanup.js';
import { MachineReconciler } from './machine-reconciler.js';
import { controllerMetrics, workQueueMetrics, type ControllerMetrics } from './metrics.js';
import { collectReferences } from './references.js';
import { buildSummary, StatusWriter } from './status-report.js';
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
>;

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
  readonly caches: RancherCaches;
  readonly metrics: ControllerMetrics;
  readonly reconciler: MachineReconciler;
  readonly monitor: CredentialMonitor;
  readonly loadBalancers: LoadBalancerCleanup;
  private readonly machineQueue: WorkQueue;
  private readonly credentialQueue: WorkQueue;
  private readonly clusterQueue: WorkQueue;
  private readonly lbQueue: WorkQueue;
  private readonly harvester = new HarvesterClients();
  private readonly status: StatusWriter;
  private readonly events: EventRecorder;
  private synced = false;
  private stopped = false;

  constructor(private readonly options: CleanupControllerOptions) {
    const { client, config, logger } = options;
    this.metrics = options.metrics ?? controllerMetrics();
    this.caches = createCaches(client, config.namespaces, config.credentialNamespace, logger, {
      labelSelector: config.credentialLabelSelector,
      fieldSelector: config.credentialFieldSelector,
    });
    const events = new EventRecorder(client, logger, config.identity);
    this.events = events;
    const queue = (
      name: string,
      reconcile: (key: string) => Promise<void | { requeueAfterMs: number }>,
      concurrency: number,
    ): WorkQueue =>
      new WorkQueue(reconcile, {
        concurrency,
        baseDelayMs: 500,
        maxDelayMs: 30_000,
        logger: logger.child({ queue: name }),
        onError: () => this.metrics.reconcileErrors.inc({ queue: name }),
        metrics: workQueueMetrics(this.metrics, name),
      });
    this.status = new StatusWriter(
      client,
      config.statusConfigMap,
      () => this.summary(),
      logger,
      options.statusIntervalMs,
    );
    const onChange = (): void => this.status.markDirty();
    this.monitor = new CredentialMonitor({
      caches: this.caches,
      harvester: this.harvester,
      events,
      metrics: this.metrics,
      logger,
      probeIntervalMs: config.probeIntervalMs,
      expiringSoonMs: config.expiringSoonMs,
      enqueueClusters: (keys) => keys.forEach((k) => this.clusterQueue.add(k)),
      enqueueCredential: (key) => this.credentialQueue.add(key),
      onChange,
    });
    this.reconciler = new MachineReconciler({
      client,
      caches: this.caches,
      harvester: this.harvester,
      events,
      metrics: this.metrics,
      logger,
      hookName: config.hookName,
      gateDeadlineMs: config.gateDeadlineMs,
      onCredentialRejected: (key) => {
        this.monitor.markRejected(key);
        this.credentialQueue.add(key);
      },
      onChange,
    });
    this.loadBalancers = new LoadBalancerCleanup({
      caches: this.caches,
      harvester: this.harvester,
      events,
      metrics: loadBalancerMetrics(this.metrics.registry),
      logger: logger.child({ component: 'load-balancer-cleanup' }),
      // The VMs go only after every gate of the cluster was released (at the latest at the gate deadline).
      deadlineMs: 2 * config.gateDeadlineMs,
      onCredentialRejected: (key) => {
        this.monitor.markRejected(key);
        this.credentialQueue.add(key);
      },
    });
    this.lbQueue = queue('load-balancers', (k) => this.loadBalancers.reconcile(k), 2);
    this.machineQueue = queue('machines', (k) => this.reconciler.reconcile(k), options.concurrency ?? 8);
    this.credentialQueue = queue('credentials', (k) => this.monitor.reconcileCredential(k), 2);
    this.clusterQueue = queue('clusters', (k) => Promise.resolve(this.monitor.reconcileCluster(k)), 2);
    this.wire();
  }

  private wire(): void {
    const { caches } = this;
    const when =
      <T extends KubeObject>(fn: (e: InformerEvent<T>) => void) =>
      (e: InformerEvent<T>) => {
        if (this.synced) fn(e);
      };
    caches.machines.on(when((e) => this.machineQueue.add(keyOf(e.object))));
    const clusterChanged = when<KubeObject>((e) => {
      this.enqueueMachinesOf(e.object.metadata.namespace ?? '', e.object.metadata.name ?? '');
      this.clusterQueue.add(keyOf(e.object));
      this.lbQueue.add(keyOf(e.object));
    });
    caches.capiClusters.on(clusterChanged);
    caches.provisioningClusters.on(clusterChanged);
    caches.harvesterMachines.on(when((e) => this.onHarvesterMachine(e.object)));
    caches.credentials.on(
      when((e) => {
        const key = keyOf(e.object);
        this.credentialQueue.add(key);
        // A renewed credential: retry every held gate now rather than at its next backoff.
        for (const held of this.reconciler.held.keys()) this.machineQueue.add(held);
      }),
    );
  }

  private onHarvesterMachine(hm: HarvesterMachine): void {
    const ns = hm.metadata.namespace ?? '';
    const owner = hm.metadata.ownerReferences?.find((o) => o.kind === 'Machine')?.name;
    const machine = hm.metadata.labels?.[LABEL_RKE_CAPI_MACHINE] ?? owner;
    if (machine) this.machineQueue.add(`${ns}/${machine}`);
    else
      for (const m of this.caches.machines.list(
        (m) => m.metadata.namespace === ns && m.spec.infrastructureRef?.name === hm.metadata.name,
      ))
        this.machineQueue.add(keyOf(m));
    const cluster = hm.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME];
    if (cluster) {
      this.clusterQueue.add(`${ns}/${cluster}`);
      this.lbQueue.add(`${ns}/${cluster}`);
    }
  }

  private enqueueMachinesOf(namespace: string, cluster: string): void {
    for (const m of this.caches.machines.list(
      (m) => m.metadata.namespace === namespace && m.spec.clusterName === cluster,
    ))
      this.machineQueue.add(keyOf(m));
  }

  private summary() {
    const refs = collectReferences(
      this.caches.provisioningClusters.list(),
      this.caches.harvesterMachines.list(),
    ).flatMap((c) => c.references);
    return buildSummary({
      now: new Date(),
      holder: this.options.config.identity,
      credentials: this.monitor.records.values(),
      referencedBy: (secret) =>
        refs.filter((r) => formatSecretRef(r.credential) === secret).map((r) => r.referrer),
      held: this.reconciler.held.values(),
      mismatches: [...this.monitor.mismatches.values()].flat(),
    });
  }

  get ready(): boolean {
    return this.synced && !this.stopped;
  }

  /** Starts the informers, waits for them all, then reconciles everything once. */
  async start(): Promise<void> {
    const { caches } = this;
    await Promise.all(
      [
        caches.machines,
        caches.capiClusters,
        caches.provisioningClusters,
        caches.harvesterMachines,
        caches.credentials,
      ].map((c) => c.start()),
    );
    if (this.stopped) return;
    this.synced = true;
    for (const s of caches.credentials.list()) this.credentialQueue.add(keyOf(s));
    for (const c of caches.provisioningClusters.list()) this.clusterQueue.add(keyOf(c));
    for (const c of [...caches.provisioningClusters.list(), ...caches.capiClusters.list()])
      if (c.metadata.deletionTimestamp) this.lbQueue.add(keyOf(c));
    for (const m of caches.machines.list()) this.machineQueue.add(keyOf(m));
    this.status.markDirty();
    this.options.logger.info('caches synced', {
      machines: caches.machines.size,
      harvesterMachines: caches.harvesterMachines.size,
      credentials: caches.credentials.size,
      ...memoryFigures(),
    });
  }

  /**
   * Stops acting at once (leadership lost): no queued or retried work starts any more and
   * the status summary is not written again. What is in flight is left to the process
   * exit that follows; stop() still releases everything.
   */
  halt(): void {
    this.stopped = true;
    for (const q of [this.machineQueue, this.credentialQueue, this.clusterQueue]) void q.stop();
    void this.status.stop({ flush: false });
  }

  /** Resolves when no work is queued or running (tests, benchmarks). */
  async idle(): Promise<void> {
    // A credential probe runs beside its queue and brings its key back when it answers.
    do {
      await this.monitor.probesSettled();
      await Promise.all([
        this.machineQueue.idle(),
        this.credentialQueue.idle(),
        this.clusterQueue.idle(),
        this.lbQueue.idle(),
      ]);
    } while (this.monitor.probing);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.monitor.stop();
    const { caches } = this;
    await Promise.all([
      this.machineQueue.stop(),
      this.credentialQueue.stop(),
      this.clusterQueue.stop(),
      this.lbQueue.stop(),
    ]);
    await Promise.all(
      [
        caches.machines,
        caches.capiClusters,
        caches.provisioningClusters,
        caches.harvesterMachines,
        caches.credentials,
      ].map((c) => c.stop()),
    );
    await this.events.drain();
    await this.status.stop();
    this.harvester.closeAll();
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
