// The cleanup controller on Rancher's local cluster: one manager (src/kube/manager.ts) and the
// list of what runs on it, each controller's watches and reconciler in its own folder's setup.
// The manager starts every cache, waits until all have synced, then starts the queues: a
// Machine seen before its Cluster would otherwise look orphaned and have its gate released.
import { Manager, type KubeClient, type LeaderElection, type LeadershipCallbacks } from '../kube/index.js';
import type { Logger } from '../log/logger.js';
import type { CredentialMonitor } from './credentials/credential-monitor.js';
import * as credentials from './credentials/setup.js';
import * as deletedClusters from './deleted-clusters/setup.js';
import * as gate from './gate/setup.js';
import * as guestVolumes from './guest-volumes/setup.js';
import * as loadBalancers from './load-balancers/setup.js';
import { controllerMetrics, workQueueMetrics, type ControllerMetrics } from './common/metrics.js';
import { closing, sharedPieces, type CleanupControllerConfig } from './common/setup-context.js';
import * as status from './status/setup.js';

export type { CleanupControllerConfig };

export interface CleanupControllerOptions {
  client: KubeClient;
  config: CleanupControllerConfig;
  logger: Logger;
  metrics?: ControllerMetrics;
  /** Machines reconciled at once (each waits on Harvester). */
  concurrency?: number;
  statusIntervalMs?: number;
  /** For Manager.run(): campaign first, and the hooks the process acts on. */
  leaderElection?: (callbacks: LeadershipCallbacks) => LeaderElection;
  onLeadershipChange?: (leading: boolean) => void;
  onLeadershipLost?: () => void;
  onStartFailed?: (err: unknown) => void;
}

export class CleanupController {
  readonly manager: Manager;
  readonly metrics: ControllerMetrics;
  readonly monitor: CredentialMonitor;

  constructor(options: CleanupControllerOptions) {
    const { client, config, logger, leaderElection, onLeadershipChange, onLeadershipLost, onStartFailed } =
      options;
    const metrics = (this.metrics = options.metrics ?? controllerMetrics());
    const manager = (this.manager = new Manager({
      client,
      logger,
      queueDefaults: { baseDelayMs: 500, maxDelayMs: 30_000, concurrency: 2 },
      metricsFor: (name) => workQueueMetrics(metrics, name),
      onReconcileError: (queue) => metrics.reconcileErrors.inc({ queue }),
      ...(leaderElection ? { leaderElection } : {}),
      ...(onLeadershipChange ? { onLeadershipChange } : {}),
      ...(onLeadershipLost ? { onLeadershipLost } : {}),
      ...(onStartFailed ? { onStartFailed } : {}),
    }));
    const shared = sharedPieces(manager, { client, config, logger, metrics });
    const guest = guestVolumes.guestVolumeRecord(manager, shared);
    const { reconciler } = gate.setup(manager, shared, {
      ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
      lastInventory: (cluster, timeoutMs) => guest.ownership.finalInventory(cluster, timeoutMs),
    });
    const { monitor } = credentials.setup(manager, shared);
    loadBalancers.setup(manager, shared);
    guestVolumes.setup(manager, shared, guest);
    deletedClusters.setup(manager, shared, guest);
    closing(manager, shared);
    status.setup(manager, shared, { monitor, reconciler, guest }, { intervalMs: options.statusIntervalMs });
    this.monitor = monitor;
  }

  get ready(): boolean {
    return this.manager.synced;
  }

  /** Starts the caches, waits for them all, then reconciles everything once. */
  start(): Promise<void> {
    return this.manager.start();
  }

  /** Stops acting at once (leadership lost); stop() still releases everything. */
  halt(): void {
    this.manager.halt();
  }

  /** Resolves when no work is queued or running (tests, benchmarks). */
  async idle(): Promise<void> {
    // A credential probe runs beside its queue and brings its key back when it answers.
    do {
      await this.monitor.probesSettled();
      await this.manager.idle();
    } while (this.monitor.probing);
  }

  stop(): Promise<void> {
    return this.manager.stop();
  }
}
