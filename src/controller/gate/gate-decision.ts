// The gate: a Cluster API pre-terminate hook on each Harvester-backed Machine. Cluster API
// does not delete the HarvesterMachine (and so Rancher does not run the driver's removal)
// while the hook is there. These two pure functions say when to add it, when to do the
// cleanup, and when to let go.
import type { FailureReason } from '../common/failure.js';
import { formatDuration } from '../../common/durations.js';
import type { DeletionScope } from './deletion-scope.js';

export type InfraState = 'present' | 'deleting' | 'gone';

export interface GateInput {
  hookPresent: boolean;
  scope: DeletionScope;
  infra: InfraState;
}

export interface GatePlan {
  addHook: boolean;
  /** Annotate the VM (whole-cluster deletion only). */
  cleanUp: boolean;
  /** Release now, without cleanup; the reason goes into an Event. */
  release?: { reason: string; warning: boolean };
}

export function decideGate({ hookPresent, scope, infra }: GateInput): GatePlan {
  switch (scope.kind) {
    case 'not-deleting':
      // A machine whose infra machine is already going cannot be gated any more.
      return { addHook: !hookPresent && infra === 'present', cleanUp: false };
    case 'single-machine':
      return release(
        hookPresent,
        'only this machine is being deleted (scale-down or replacement): workload volumes are kept',
        false,
      );
    case 'opted-out':
      return release(
        hookPresent,
        `cleanup opted out by harvesterhci.io/skipHarvesterMachineProvisionCleanup on ${scope.on}`,
        false,
      );
    case 'cluster-unknown':
      return release(
        hookPresent,
        'neither the CAPI nor the provisioning Cluster exists: volumes are kept',
        true,
      );
    case 'whole-cluster':
      if (infra === 'gone')
        return release(hookPresent, 'the HarvesterMachine is already gone: nothing left to annotate', false);
      // Without our hook (deleted before the controller saw it) the cleanup is best effort,
      // as Rancher's: no hook is added to a Machine being deleted, since Cluster API may be
      // past that point, and a hook added after our own release would hold it again.
      return { addHook: false, cleanUp: true };
  }
}

function release(hookPresent: boolean, reason: string, warning: boolean): GatePlan {
  return hookPresent
    ? { addHook: false, cleanUp: false, release: { reason, warning } }
    : { addHook: false, cleanUp: false };
}

export type CleanupOutcome =
  | { kind: 'annotated'; vm: string; how: string }
  | { kind: 'already-annotated'; vm: string }
  | { kind: 'vm-gone'; looked: string }
  | { kind: 'failed'; reason: FailureReason; message: string };

export type { FailureReason } from '../common/failure.js';

export type AfterCleanup =
  | { action: 'release'; reason: string; warning: boolean }
  | { action: 'hold'; retryInMs: number; reason: FailureReason; message: string };

/**
 * When a failing cleanup must let go: `deadlineMs` after the Machine's deletionTimestamp
 * (the server's clock, so a restarted controller keeps the same deadline), or after `now`
 * when the timestamp cannot be read.
 */
export function gateDeadlineAt(
  deletionTimestamp: string | undefined,
  deadlineMs: number,
  now: number,
): number {
  const since = Date.parse(deletionTimestamp ?? '');
  return (Number.isNaN(since) ? now : since) + deadlineMs;
}

/**
 * How long the next cleanup attempt may take, decided before it starts: until the deadline,
 * so that no attempt (a Harvester that accepts connections and never answers, retries, a
 * credential that throws) can hold the gate past it. Past the deadline, a Machine never
 * tried by this process (a controller that was down) gets one short last attempt; one that
 * already failed here is released without another.
 */
export function cleanupBudget(input: {
  deadline: number;
  now: number;
  triedBefore: boolean;
  lastChanceMs: number;
}): { attempt: true; timeoutMs: number } | { attempt: false } {
  const left = input.deadline - input.now;
  if (left > 0) return { attempt: true, timeoutMs: left };
  return input.triedBefore ? { attempt: false } : { attempt: true, timeoutMs: input.lastChanceMs };
}

/**
 * After a cleanup attempt: release on success; on failure hold the gate and retry, until
 * `deadlineMs` after the Machine's deletionTimestamp (the server's clock, so a restarted
 * controller keeps the same deadline). Past it, release with a warning: a cluster deletion
 * must never be blocked forever, and the data loss risk is then the same as without us.
 */
export function decideAfterCleanup(input: {
  outcome: CleanupOutcome;
  deletionTimestamp: string | undefined;
  now: number;
  deadlineMs: number;
  retryInMs: number;
}): AfterCleanup {
  const { outcome } = input;
  switch (outcome.kind) {
    case 'annotated':
      return {
        action: 'release',
        reason: `VM ${outcome.vm} annotated (found by ${outcome.how}): all its volumes go with it`,
        warning: false,
      };
    case 'already-annotated':
      return { action: 'release', reason: `VM ${outcome.vm} was already annotated`, warning: false };
    case 'vm-gone':
      return {
        action: 'release',
        reason: `no VM found (${outcome.looked}): nothing to annotate`,
        warning: false,
      };
    case 'failed': {
      const deadline = gateDeadlineAt(input.deletionTimestamp, input.deadlineMs, input.now);
      if (input.now >= deadline) {
        return {
          action: 'release',
          reason: `deadline of ${formatDuration(input.deadlineMs)} after deletion passed while ${outcome.reason}: ${outcome.message}; the removal goes ahead and this VM's workload volumes may be left on Harvester`,
          warning: true,
        };
      }
      return {
        action: 'hold',
        retryInMs: Math.max(0, Math.min(input.retryInMs, deadline - input.now)),
        reason: outcome.reason,
        message: outcome.message,
      };
    }
  }
}
