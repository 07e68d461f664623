// Credential health: each Harvester cloud credential's state (probe + recorded expiry),
// Events on the credential and on everything that references it when it turns bad, and
// per cluster the "machine/pool on an expired credential while the cluster's is valid" report.
import { formatKey, KeyMap, objectKey, type ObjectKey } from '../../api/object-key.js';
import type { ReconcileResult } from '../../kube/index.js';
import { KubeconfigError } from '../../kube/kubeconfig-content.js';
import { Resources } from '../../kube/resources.js';
import type { Logger } from '../../log/logger.js';
import {
  expiryFromAnnotation,
  harvesterClusterId,
  isHarvesterCredential,
} from '../../rancher/cloud-credential.js';
import { BY_CLUSTER, BY_CREDENTIAL, clusterIndexKey, type RancherCaches } from '../common/caches.js';
import { Reasons } from '../constants.js';
import { formatSecretRef, type SecretRef } from '../common/credential-choice.js';
import {
  classifyCredential,
  findCredentialMismatches,
  type CredentialHealth,
  type CredentialState,
  type MismatchReport,
  type ProbeResult,
} from './credential-health.js';
import type { EventRecorder } from '../common/events.js';
import { probeCredential, type HarvesterClients } from '../../harvester-access/clients.js';
import { replaceAll, type ControllerMetrics } from '../common/metrics.js';
import { collectReferences } from './references.js';

export interface CredentialRecord {
  secret: string;
  harvesterClusterId?: string;
  health: CredentialHealth;
  /** The last probe's answer and when it was had; reused until the next probe is due. */
  probe: ProbeResult;
  /** What is wrong with the kubeconfig, when the probe found it unusable. */
  problem?: string;
  probedAt?: number;
  version: string;
}

export interface MonitorDeps {
  caches: RancherCaches;
  harvester: HarvesterClients;
  events: EventRecorder;
  metrics: ControllerMetrics;
  logger: Logger;
  probeIntervalMs: number;
  expiringSoonMs: number;
  /** Enqueue these clusters' reports (their credentials changed state). */
  enqueueClusters: (keys: ObjectKey[]) => void;
  /** Reconcile this credential again (its probe has an answer). */
  enqueueCredential: (key: ObjectKey) => void;
  /** The most one probe may take, credential and retries included (default 30 s). */
  probeDeadlineMs?: number;
  onChange: () => void;
  now?: () => number;
}

const REPORTED: ReadonlySet<CredentialState> = new Set(['expired', 'rejected', 'invalid', 'expiring-soon']);
const DEFAULT_PROBE_DEADLINE_MS = 30_000;

interface ProbeAnswer {
  version: string;
  probe: ProbeResult;
  problem?: string;
  at: number;
}

export class CredentialMonitor {
  readonly records = new Map<string, CredentialRecord>();
  readonly mismatches = new Map<string, MismatchReport[]>();
  private readonly forceProbe = new KeyMap<true>();
  /**
   * Probes run beside the queue, never in it: a credential whose Harvester never answers
   * (or answers slowly, on purpose) must not hold a worker that other credentials wait for.
   * The queue starts a probe and moves on; its answer brings the key back.
   */
  private readonly inFlight = new KeyMap<{ version: string; done: Promise<void> }>();
  private readonly answers = new KeyMap<ProbeAnswer>();
  private stopped = false;

  constructor(private readonly deps: MonitorDeps) {}

  /** Resolves when no probe is running (tests, benchmarks: with the queues' idle()). */
  async probesSettled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight.values()].map((p) => p.done));
  }

  get probing(): boolean {
    return this.inFlight.size > 0;
  }

  /** No probe answer is taken any more (the controller stops). */
  stop(): void {
    this.stopped = true;
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** The reconciler saw Harvester reject this credential: probe again at the next pass. */
  markRejected(key: ObjectKey): void {
    this.forceProbe.set(key, true);
  }

  state(ref: SecretRef): { state: CredentialState; harvesterClusterId?: string } | undefined {
    const r = this.records.get(formatSecretRef(ref));
    return r
      ? {
          state: r.health.state,
          ...(r.harvesterClusterId ? { harvesterClusterId: r.harvesterClusterId } : {}),
        }
      : undefined;
  }

  /** Never waits on Harvester: a due probe is started, and its answer enqueues the key again. */
  reconcileCredential(secretKey: ObjectKey): Promise<ReconcileResult> {
    return Promise.resolve(this.reconcileCredentialNow(secretKey));
  }

  private reconcileCredentialNow(secretKey: ObjectKey): ReconcileResult {
    const key = formatKey(secretKey);
    const secret = this.deps.caches.credentials.get(secretKey);
    const previous = this.records.get(key);
    if (!secret || !isHarvesterCredential(secret)) {
      this.answers.delete(secretKey);
      if (previous) {
        this.records.delete(key);
        this.deps.harvester.forget(key);
        this.publish();
      }
      return;
    }
    const now = this.now();
    const version = secret.metadata.resourceVersion ?? '';
    const answer = this.answers.get(secretKey);
    const current = answer?.version === version ? answer : undefined;
    const due =
      current === undefined ||
      now - current.at >= this.deps.probeIntervalMs ||
      this.forceProbe.has(secretKey);
    if (due && this.inFlight.get(secretKey)?.version !== version) {
      this.forceProbe.delete(secretKey);
      const settled = this.startProbe(secretKey, secret, version);
      // A kubeconfig that cannot be used is known without a request: no need to wait.
      if (settled) this.answers.set(secretKey, settled);
    }
    const known = this.answers.get(secretKey);
    // Until a probe of this version answers, the last answer stands (a renewal does not
    // flash "unknown"); between probes the expiry alone can move the state.
    const {
      probe,
      problem,
      at: probedAt,
    } = known?.version === version
      ? known
      : previous
        ? { probe: previous.probe, problem: previous.problem, at: previous.probedAt }
        : { probe: 'not-probed' as const, problem: undefined, at: undefined };
    const expiresAt = expiryFromAnnotation(secret);
    const health = classifyCredential({
      expiresAt,
      probe,
      ...(problem !== undefined ? { problem } : {}),
      now: new Date(now),
      expiringSoonMs: this.deps.expiringSoonMs,
    });
    const clusterId = harvesterClusterId(secret);
    this.records.set(key, {
      secret: key,
      ...(clusterId ? { harvesterClusterId: clusterId } : {}),
      health,
      probe,
      ...(problem !== undefined ? { problem } : {}),
      ...(probedAt !== undefined ? { probedAt } : {}),
      version,
    });
    if (previous?.health.state !== health.state) {
      this.reportTransition(secretKey, health);
      this.deps.enqueueClusters(this.referencingClusters(key));
    }
    this.publish();
    return { requeueAfterMs: this.nextCheck(now, expiresAt) };
  }

  /**
   * Starts the probe of this version of the credential, unless its kubeconfig cannot be
   * used: that is known at once (nothing is sent) and returned. Never throws: what the probe
   * finds is a state of the credential, not an error of the queue.
   */
  private startProbe(
    secretKey: ObjectKey,
    secret: Parameters<HarvesterClients['forSecret']>[0],
    version: string,
  ): ProbeAnswer | undefined {
    const key = formatKey(secretKey);
    let client;
    try {
      client = this.deps.harvester.forSecret(secret);
    } catch (err) {
      const problem = err instanceof KubeconfigError ? err.message : undefined;
      if (!problem) this.failed(key, err);
      return problem !== undefined
        ? { version, probe: 'invalid', problem, at: this.now() }
        : { version, probe: 'unreachable', at: this.now() };
    }
    if (!client) return { version, probe: 'unreachable', at: this.now() };
    const deadlineMs = this.deps.probeDeadlineMs ?? DEFAULT_PROBE_DEADLINE_MS;
    let timer: NodeJS.Timeout | undefined;
    const overdue = new Promise<{ result: ProbeResult; error?: Error }>((resolve) => {
      timer = setTimeout(
        () => resolve({ result: 'unreachable', error: new Error(`no answer within ${deadlineMs} ms`) }),
        deadlineMs,
      );
    });
    const done = Promise.race([probeCredential(client), overdue])
      .then(
        ({ result, error }) => {
          if (error)
            this.deps.logger.debug('credential probe', { secret: key, result, error: error.message });
          return result === 'not-probed' ? 'unreachable' : result;
        },
        (err: unknown): ProbeResult => {
          this.failed(key, err);
          return 'unreachable';
        },
      )
      .then((probe) => {
        clearTimeout(timer);
        this.inFlight.delete(secretKey);
        if (this.stopped) return;
        this.answers.set(secretKey, { version, probe, at: this.now() });
        this.deps.enqueueCredential(secretKey);
      });
    this.inFlight.set(secretKey, { version, done });
    return undefined;
  }

  private failed(key: string, err: unknown): void {
    this.deps.logger.warn('credential probe failed', {
      secret: key,
      error: err instanceof Error ? err.message : String(err),
    });
  }

  /** Next look: the probe interval, or the moment the credential expires or enters the warning window. */
  private nextCheck(now: number, expiresAt: Date | undefined): number {
    let next = this.deps.probeIntervalMs;
    if (expiresAt) {
      for (const t of [expiresAt.getTime() - this.deps.expiringSoonMs, expiresAt.getTime()])
        if (t > now) next = Math.min(next, t - now + 1000);
    }
    return Math.max(1000, next);
  }

  private referencingClusters(secretKey: string): ObjectKey[] {
    return this.referencesTo(secretKey)
      .filter((c) => c.references.some((r) => formatSecretRef(r.credential) === secretKey))
      .map((c) => objectKey(c.cluster.namespace, c.cluster.name));
  }

  /** Every cluster with its references, of the HarvesterMachines only those on this credential. */
  private referencesTo(secretKey: string) {
    return collectReferences(
      this.deps.caches.provisioningClusters.list(),
      this.deps.caches.harvesterMachines.byIndex(BY_CREDENTIAL, secretKey),
    );
  }

  private reportTransition(secretKey: ObjectKey, health: CredentialHealth): void {
    const key = formatKey(secretKey);
    const { name } = secretKey;
    if (!REPORTED.has(health.state)) return;
    const reason =
      health.state === 'expiring-soon'
        ? Reasons.credentialExpiringSoon
        : health.state === 'expired'
          ? Reasons.credentialExpired
          : health.state === 'invalid'
            ? Reasons.credentialInvalid
            : Reasons.credentialRejected;
    const secret = this.deps.caches.credentials.get(secretKey);
    if (!secret) return;
    const refs = this.referencesTo(key).flatMap((c) =>
      c.references.filter((r) => formatSecretRef(r.credential) === key),
    );
    const renew =
      health.state === 'invalid'
        ? `fix its kubeconfig in Rancher (Cluster Management > Cloud Credentials > ${name} > Edit)`
        : `renew it in Rancher (Cluster Management > Cloud Credentials > ${name} > Renew)`;
    const users = refs.length
      ? `; referenced by ${refs.map((r) => r.referrer).join(', ')}`
      : '; referenced by nothing this controller watches';
    this.deps.events.record(
      Resources.secret,
      secret,
      'Warning',
      reason,
      `Harvester cloud credential ${health.detail}${users}; ${renew}`,
    );
    for (const r of refs) {
      const [kind, target] = r.machine
        ? [Resources.harvesterMachine, this.deps.caches.harvesterMachines.get(r.machine)]
        : [Resources.provisioningCluster, this.deps.caches.provisioningClusters.get(r.cluster)];
      if (target)
        this.deps.events.record(
          kind,
          target,
          'Warning',
          reason,
          `${r.referrer} uses cloud credential ${r.credential.namespace}:${r.credential.name}, which ${health.detail}; ${renew}`,
        );
    }
  }

  /** Per provisioning cluster: expired pool/machine credentials next to a valid cluster credential. */
  reconcileCluster(clusterKey: ObjectKey): void {
    const key = formatKey(clusterKey);
    const { namespace } = clusterKey;
    const cluster = this.deps.caches.provisioningClusters.get(clusterKey);
    if (!cluster) {
      if (this.mismatches.delete(key)) this.publish();
      return;
    }
    const machines = this.deps.caches.harvesterMachines.byIndex(
      BY_CLUSTER,
      clusterIndexKey(namespace, clusterKey.name),
    );
    const refs = collectReferences([cluster], machines)[0];
    const found = refs
      ? findCredentialMismatches({
          clusterCredential: refs.clusterCredential,
          references: refs.references,
          lookup: (r) => this.state(r),
        })
      : [];
    const before = new Set(
      (this.mismatches.get(key) ?? []).map((m) => `${m.referrer}|${formatSecretRef(m.expired)}`),
    );
    for (const m of found) {
      if (before.has(`${m.referrer}|${formatSecretRef(m.expired)}`)) continue;
      this.deps.events.record(
        Resources.provisioningCluster,
        cluster,
        'Warning',
        Reasons.credentialMismatch,
        `${m.referrer} uses expired cloud credential ${m.expired.namespace}:${m.expired.name} while the cluster's ${m.valid.namespace}:${m.valid.name} is valid for the same Harvester cluster ${m.harvesterClusterId}; its VM cannot be removed until fixed. Fix: ${m.shortFix} (every command: the status ConfigMap)`,
      );
    }
    if (found.length) this.mismatches.set(key, found);
    else this.mismatches.delete(key);
    this.publish();
  }

  private publish(): void {
    const { metrics } = this.deps;
    const counts = new Map<CredentialState, number>(
      (['valid', 'expiring-soon', 'expired', 'rejected', 'invalid', 'unknown'] as const).map((s) => [s, 0]),
    );
    for (const r of this.records.values()) counts.set(r.health.state, (counts.get(r.health.state) ?? 0) + 1);
    replaceAll(
      metrics.credentials,
      [...counts].map(([state, n]) => [{ state }, n]),
    );
    replaceAll(
      metrics.credentialExpiry,

      [...this.records.values()]
        .filter((r) => r.health.expiresAt)
        .map((r) => [{ secret: r.secret }, Math.floor((r.health.expiresAt?.getTime() ?? 0) / 1000)]),
    );
    metrics.credentialMismatches.set(
      {},
      [...this.mismatches.values()].reduce((n, l) => n + l.length, 0),
    );
    this.deps.onChange();
  }
}
