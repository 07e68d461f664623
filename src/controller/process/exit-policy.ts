// When the manager stops acting on its own, the process ends: a Deployment restarts only a
// process that exits, and whatever it still had in flight dies with it. The decision (exit
// code, message, whether to shut down first and for how long) is pure (exitPlan); exitAfter
// carries it out.
import type { Logger } from '../../log/logger.js';

/** Exit status: leadership lost, or the controller could not start (e.g. a list its RBAC denies). */
export const EXIT_FAILED = 1;
/** A shutdown after a failed start gets this long before the process exits anyway. */
export const FAILED_START_SHUTDOWN_MS = 5_000;

/** How the manager stopped acting without being asked to. */
export type ManagerStop = { reason: 'leadership-lost' } | { reason: 'start-failed'; error: unknown };

export interface ExitPlan {
  code: number;
  message: string;
  fields?: Record<string, string>;
  /** Shut down first, waiting at most this long; absent: exit at once. */
  shutdownWithinMs?: number;
}

export function exitPlan(stop: ManagerStop): ExitPlan {
  switch (stop.reason) {
    // Another replica may take over once the lease duration is up: the manager stopped acting
    // (halt); exit now, as a clean shutdown could wait on requests that no longer get answers.
    case 'leadership-lost':
      return { code: EXIT_FAILED, message: 'leadership lost; exiting' };
    // Exit, not just stop: the informers that did start keep their watches and timers alive.
    // A shutdown that hangs on the apiserver does not hold the exit for longer than the bound.
    case 'start-failed':
      return {
        code: EXIT_FAILED,
        message: 'controller failed to start; exiting',
        fields: { error: stop.error instanceof Error ? stop.error.message : String(stop.error) },
        shutdownWithinMs: FAILED_START_SHUTDOWN_MS,
      };
  }
}

export interface ExitEffects {
  logger: Logger;
  shutdown: () => Promise<void>;
  exit: (code: number) => void;
}

/** Logs the plan's message, shuts down first when it says so (bounded), then exits. */
export function exitAfter(plan: ExitPlan, { logger, shutdown, exit }: ExitEffects): void {
  logger.error(plan.message, plan.fields);
  if (plan.shutdownWithinMs === undefined) return exit(plan.code);
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, plan.shutdownWithinMs)));
  void Promise.race([shutdown().catch(() => undefined), bound]).then(() => {
    clearTimeout(timer);
    exit(plan.code);
  });
}
