// One CAPI Machine at a time: add the gate, and on deletion decide, clean up and release.
// Decisions come from deletion-scope.ts and gate-decision.ts; this file only does the I/O.
import { formatKey, KeyMap, keyOf, keyText, objectKey, type ObjectKey } from '../../api/object-key.js';
import {
  ignoreNotFound,
  isConflict,
  isNotFound,
  type KubeClient,
  type ReconcileResult,
} from '../../kube/index.js';
import { Resources } from '../../kube/resources.js';
import type { Logger } from '../../log/logger.js';
import { redact } from '../../log/redact.js';
import {
  CAPI_LABEL_CLUSTER_NAME,
  HARVESTER_MACHINE_GROUP,
  HARVESTER_MACHINE_KIND,
} from '../../rancher/labels.js';
import type { RancherCaches } from '../common/caches.js';
import { CONDITION_CLEANUP, HOOK_OWNER, Reasons, hookAnnotation } from '../constants.js';
import { attemptCleanup } from './machine-cleanup.js';
import { classifyDeletion } from './deletion-scope.js';
import type { EventRecorder } from '../common/events.js';
import {
  cleanupBudget,
  decideAfterCleanup,
  decideGate,
  gateDeadlineAt,
  type CleanupOutcome,
  type FailureReason,
  type InfraState,
} from './gate-decision.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import type { ControllerMetrics } from '../common/metrics.js';
import type { CapiCondition, CapiMachine } from '../common/types.js';

export interface HeldGate {
  machine: string;
  reason: FailureReason;
  message: string;
  since: string;
  releaseBy: string;
}

/** Why a gate is released, and how that is recorded. */
interface Release {
  /** The Event's and the condition's message. */
  reason: string;
  /** A release without the cleanup (the deadline): a Warning, and the condition stays False. */
  warning: boolean;
  /** The gateReleases metric's reason label. */
  metricReason: string;
  /** The Event's reason (default: deadline or released, by `warning`). */
  eventReason?: string;
}

export interface MachineReconcilerDeps {
  client: KubeClient;
  caches: RancherCaches;
  harvester: HarvesterClients;
  events: EventRecorder;
  metrics: ControllerMetrics;
  logger: Logger;
  hookName: string;
  gateDeadlineMs: number;
  /** Called when a credential was rejected, so the credential report knows at once. */
  onCredentialRejected: (secretKey: ObjectKey) => void;
  onChange: () => void;
  /**
   * Before the first VM of a cluster deleted as a whole is annotated (so before any of its
   * gates is released): the last inventory of its volumes, while its apiserver may still
   * answer (volume-ownership.ts). Resolves within the time given.
   */
  lastInventory?: (cluster: ObjectKey, timeoutMs: number) => Promise<void>;
  now?: () => number;
}

const OUTCOME_REASONS = {
  annotated: Reasons.vmAnnotated,
  'already-annotated': Reasons.vmAlreadyAnnotated,
  'vm-gone': Reasons.vmGone,
} as const;

export function isHarvesterBacked(machine: CapiMachine): boolean {
  const ref = machine.spec?.infrastructureRef;
  return (
    ref?.kind === HARVESTER_MACHINE_KIND && (ref.apiVersion ?? '').startsWith(`${HARVESTER_MACHINE_GROUP}/`)
  );
}

const MAX_RETRY_MS = 60_000;
/** A Machine first seen past its deadline (the controller was down) gets one attempt this long. */
const LAST_CHANCE_MS = 10_000;
/** The longest the last inventory may hold the first gate of a cluster (it leaves LAST_CHANCE_MS to the deadline). */
const LAST_INVENTORY_MS = 20_000;

export class MachineReconciler {
  /** Gates held by a failing cleanup: the status summary and the gatesHeld metric. */
  readonly held = new KeyMap<HeldGate>();
  private readonly attempts = new Map<string, number>();
  /** Machines being deleted whose cleanup already succeeded: later events of them need no Harvester call. */
  private readonly cleaned = new Set<string>();
  /**
   * A cleanup that succeeded but whose release has not yet: Cluster API writes the Machine's
   * status as its deletion starts, so the release (conditional on the resourceVersion the
   * decision was made on) often meets a Conflict; deciding again must not repeat the Harvester
   * call, nor report our own annotation as found already there.
   */
  private readonly pendingRelease = new Map<string, { uid: string | undefined; outcome: CleanupOutcome }>();
  private readonly hook: string;

  constructor(private readonly deps: MachineReconcilerDeps) {
    this.hook = hookAnnotation(deps.hookName);
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  async reconcile(machineKey: ObjectKey): Promise<ReconcileResult> {
    const key = formatKey(machineKey);
    const { namespace } = machineKey;
    const { caches } = this.deps;
    const machine = caches.machines.get(machineKey);
    if (!machine || !isHarvesterBacked(machine)) {
      this.cleaned.delete(key);
      return this.forget(machineKey);
    }
    const clusterName = machine.spec.clusterName || machine.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME] || '';
    const provisioningCluster = caches.provisioningClusters.get(objectKey(namespace, clusterName));
    const infraRef = machine.spec.infrastructureRef;
    const hm = caches.harvesterMachines.get(objectKey(infraRef.namespace ?? namespace, infraRef.name ?? ''));
    const infra: InfraState = !hm ? 'gone' : hm.metadata.deletionTimestamp ? 'deleting' : 'present';
    const hookPresent = machine.metadata.annotations?.[this.hook] !== undefined;
    const scope = classifyDeletion({
      machine,
      capiCluster: caches.capiClusters.get(objectKey(namespace, clusterName)),
      provisioningCluster,
    });
    const plan = decideGate({ hookPresent, scope, infra });

    if (plan.addHook) await this.addHook(machine);
    if (plan.release) {
      await this.release(machine, key, { ...plan.release, metricReason: scope.kind });
      return this.forget(machineKey);
    }
    if (!plan.cleanUp || !hm || (!hookPresent && this.cleaned.has(key))) return;
    if (this.deps.lastInventory && !this.pendingRelease.has(key)) {
      const deadline = gateDeadlineAt(
        machine.metadata.deletionTimestamp,
        this.deps.gateDeadlineMs,
        this.now(),
      );
      const budget = Math.min(LAST_INVENTORY_MS, deadline - this.now() - LAST_CHANCE_MS);
      if (budget > 0) await this.deps.lastInventory(objectKey(namespace, clusterName), budget);
    }

    const outcome = await this.cleanupOutcome(key, machine, hm, provisioningCluster, clusterName);
    return this.settle(machine, key, hookPresent, outcome);
  }

  /** The outcome of this pass's cleanup of a Machine's VM. */
  private async cleanupOutcome(
    key: string,
    machine: CapiMachine,
    hm: NonNullable<ReturnType<RancherCaches['harvesterMachines']['get']>>,
    provisioningCluster: ReturnType<RancherCaches['provisioningClusters']['get']>,
    clusterName: string,
  ): Promise<CleanupOutcome> {
    const { caches } = this.deps;
    // The deadline is fixed before any Harvester I/O, and the attempt cannot outlast it nor
    // throw past it: whatever the credential holds and however Harvester behaves, the gate
    // is released at the deadline. A successful cleanup
    // whose release met a Conflict is reused, not done again.
    const deadline = gateDeadlineAt(machine.metadata.deletionTimestamp, this.deps.gateDeadlineMs, this.now());
    const previous = this.held.get(keyOf(machine));
    const pending = this.pendingRelease.get(key);
    const budget = cleanupBudget({
      deadline,
      now: this.now(),
      triedBefore: previous !== undefined,
      lastChanceMs: LAST_CHANCE_MS,
    });
    const outcome: CleanupOutcome =
      pending && pending.uid === machine.metadata.uid
        ? pending.outcome
        : budget.attempt
          ? await attemptCleanup(
              {
                credentials: caches.credentials,
                harvester: this.deps.harvester,
                onCredentialRejected: this.deps.onCredentialRejected,
                now: this.now(),
              },
              { machine, harvesterMachine: hm, cluster: provisioningCluster, clusterName },
              budget.timeoutMs,
            )
          : {
              kind: 'failed',
              reason: previous?.reason ?? 'HarvesterError',
              message: previous?.message ?? '',
            };
    if (outcome.kind !== 'failed') this.pendingRelease.set(key, { uid: machine.metadata.uid, outcome });
    return outcome;
  }

  /** After a cleanup attempt: release (success or deadline) or hold and retry. */
  private async settle(
    machine: CapiMachine,
    key: string,
    hookPresent: boolean,
    outcome: CleanupOutcome,
  ): Promise<ReconcileResult> {
    const attempt = (this.attempts.get(key) ?? 0) + 1;
    const after = decideAfterCleanup({
      outcome,
      deletionTimestamp: machine.metadata.deletionTimestamp,
      now: this.now(),
      deadlineMs: this.deps.gateDeadlineMs,
      retryInMs: Math.min(MAX_RETRY_MS, 1000 * 2 ** Math.min(attempt - 1, 10)),
    });
    if (after.action === 'release') {
      if (outcome.kind === 'annotated') this.deps.metrics.vmAnnotations.inc();
      const eventReason =
        after.warning || outcome.kind === 'failed' ? Reasons.gateDeadline : OUTCOME_REASONS[outcome.kind];
      if (hookPresent)
        await this.release(machine, key, {
          reason: after.reason,
          warning: after.warning,
          metricReason: after.warning ? 'deadline' : outcome.kind,
          eventReason,
        });
      else
        this.deps.events.record(
          Resources.capiMachine,
          machine,
          after.warning ? 'Warning' : 'Normal',
          eventReason,
          `${after.reason} (best effort: this Machine had no gate)`,
        );
      this.forget(keyOf(machine));
      this.cleaned.add(key);
      return;
    }
    this.attempts.set(key, attempt);
    this.deps.metrics.cleanupFailures.inc({ reason: after.reason });
    const since = machine.metadata.deletionTimestamp ?? new Date(this.now()).toISOString();
    const releaseBy = new Date(Date.parse(since) + this.deps.gateDeadlineMs).toISOString();
    // The status ConfigMap shows it as it is: redacted here, once, like Events and logs.
    const message = redact(after.message);
    this.held.set(keyOf(machine), { machine: key, reason: after.reason, message, since, releaseBy });
    this.publishHeld();
    const text = `${message}; the cleanup gate holds the removal of this machine and retries until ${releaseBy}`;
    this.deps.events.record(Resources.capiMachine, machine, 'Warning', after.reason, text);
    await this.setCondition(machine, {
      type: CONDITION_CLEANUP,
      status: 'False',
      severity: 'Warning',
      reason: after.reason,
      message: text,
    });
    return { requeueAfterMs: after.retryInMs };
  }

  private forget(machineKey: ObjectKey): void {
    const key = formatKey(machineKey);
    this.attempts.delete(key);
    this.pendingRelease.delete(key);
    if (this.held.delete(machineKey)) this.publishHeld();
  }

  private publishHeld(): void {
    this.deps.metrics.gatesHeld.set({}, this.held.size);
    this.deps.onChange();
  }

  private async addHook(machine: CapiMachine): Promise<void> {
    const at = keyOf(machine);
    const patched = await this.deps.client
      .patch(Resources.capiMachine, at, { metadata: { annotations: { [this.hook]: HOOK_OWNER } } })
      .catch(ignoreNotFound);
    if (!patched) return;
    this.deps.metrics.hooksAdded.inc();
    this.deps.events.record(
      Resources.capiMachine,
      machine,
      'Normal',
      Reasons.hookAdded,
      `added pre-terminate hook ${this.hook}: if the whole cluster is deleted, the VM is annotated before its removal runs`,
    );
  }

  /**
   * Removes only our annotation, with the resourceVersion the decision was made on: if the
   * Machine changed since, the patch fails with Conflict and the key is decided again.
   * One Event per release, saying why; the condition only where a held gate had set it
   * False (on a Machine about to disappear a True condition would be a wasted write).
   */
  private async release(machine: CapiMachine, key: string, how: Release): Promise<void> {
    const { reason, warning, metricReason } = how;
    const eventReason = how.eventReason ?? (warning ? Reasons.gateDeadline : Reasons.gateReleased);
    const at = keyOf(machine);
    const released = await this.deps.client
      .patch<CapiMachine>(Resources.capiMachine, at, {
        metadata: { resourceVersion: machine.metadata.resourceVersion, annotations: { [this.hook]: null } },
      })
      .catch(ignoreNotFound);
    if (!released) return;
    this.deps.metrics.gateReleases.inc({ reason: metricReason });
    this.deps.events.record(
      Resources.capiMachine,
      machine,
      warning ? 'Warning' : 'Normal',
      eventReason,
      `${reason}; released ${this.hook}`,
    );
    if (!this.held.has(at)) return;
    await this.setCondition(
      machine,
      {
        type: CONDITION_CLEANUP,
        status: warning ? 'False' : 'True',
        ...(warning
          ? { severity: 'Warning', reason: Reasons.gateDeadline }
          : { reason: Reasons.gateReleased }),
        message: reason,
      },
      released,
    );
  }

  /**
   * Our condition in the Machine's status, written through the status subresource with
   * the resourceVersion of a full object just read or returned by a write (Cluster API's
   * own conditions are kept as they are); a Conflict reads again.
   */
  private async setCondition(
    machine: CapiMachine,
    condition: Omit<CapiCondition, 'lastTransitionTime'>,
    current?: CapiMachine,
  ): Promise<void> {
    const at = keyOf(machine);
    let known = current;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fresh = known ?? (await this.deps.client.find<CapiMachine>(Resources.capiMachine, at));
        known = undefined;
        if (!fresh) return;
        const conditions = fresh.status?.conditions ?? [];
        const old = conditions.find((c) => c.type === condition.type);
        if (
          old &&
          old.status === condition.status &&
          old.reason === condition.reason &&
          old.message === condition.message
        )
          return;
        const next: CapiCondition = {
          ...condition,
          lastTransitionTime:
            old?.status === condition.status && old.lastTransitionTime
              ? old.lastTransitionTime
              : new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        };
        await this.deps.client.update(
          Resources.capiMachine,
          {
            ...fresh,
            status: {
              ...fresh.status,
              conditions: [...conditions.filter((c) => c.type !== condition.type), next],
            },
          },
          'status',
        );
        return;
      } catch (err) {
        if (isConflict(err)) continue;
        // Released and already removed by Cluster API: nothing left to record on.
        if (isNotFound(err)) return;
        this.deps.logger.warn('cannot write the Machine condition', {
          machine: keyText(at.namespace, at.name),
          error: err instanceof Error ? err.message : String(err),
        });
        return;
      }
    }
  }
}
