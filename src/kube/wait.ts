// The one wait: list, then watch from the list's resourceVersion, re-evaluating a
// condition on every event; resumes after dropped watches and apiserver restarts; gives
// up at a deadline with an error that says what it waited for and what it last saw.
// For what no watch shows (whether a server still accepts a credential): retryUntil, the
// same deadline and timeout error around an attempt repeated at an interval.
import { formatDuration } from '../common/durations.js';
import type { KubeClient } from './client.js';
import { KubeError, isKubeError } from './errors.js';
import type { KubeObject, ResourceType } from './resources.js';
import { WatchBackoff, pause, type WatchBackoffPolicy } from './watch-backoff.js';

export interface WaitSpec<T extends KubeObject> {
  type: ResourceType;
  namespace?: string;
  name: string;
  /** True when the wait is over; `undefined` means the object does not exist. */
  until: (obj: T | undefined) => boolean;
  /** "VM default/vm1 to be removed". */
  description: string;
  /** A short account of the current state, for progress and for the timeout error. */
  describeState?: (obj: T | undefined) => string;
  timeoutMs: number;
  onProgress?: (state: string, elapsedMs: number) => void;
  /** Ends a watch that has been quiet this long and resumes it (default 60 s). */
  idleTimeoutMs?: number;
  now?: () => number;
  /**
   * The object as the caller just read or wrote it (a create, patch or delete answer): the
   * wait starts watching from its resourceVersion instead of listing first, saving a request.
   */
  from?: T;
  /** Pacing of re-opened watches (see watch-backoff.ts); the defaults suit production. */
  backoff?: Partial<WatchBackoffPolicy>;
  /** Ends the wait early: its watch stops and the wait rejects with the signal's reason. */
  signal?: AbortSignal;
}

export class WaitTimeoutError extends KubeError {
  constructor(
    readonly description: string,
    readonly lastState: string,
    timeoutMs: number,
  ) {
    super(
      'Timeout',
      `wait for ${description}`,
      `timed out after ${formatDuration(timeoutMs)} waiting for ${description}; last seen: ${lastState}`,
    );
  }
}

export async function waitFor<T extends KubeObject>(
  client: KubeClient,
  spec: WaitSpec<T>,
): Promise<T | undefined> {
  const now = spec.now ?? Date.now;
  const started = now();
  const deadline = started + spec.timeoutMs;
  const describe = spec.describeState ?? ((o: T | undefined) => (o ? 'present' : 'absent'));
  let current: T | undefined;
  let lastState = 'not read yet';
  let resourceVersion: string | undefined;
  // A wait is bounded by its deadline: its pauses stay short so that it sees a recovered
  // server soon.
  const backoff = new WatchBackoff({ maxMs: 5_000, ...spec.backoff });

  const observe = (obj: T | undefined): boolean => {
    current = obj;
    const state = describe(obj);
    if (state !== lastState) {
      lastState = state;
      spec.onProgress?.(state, now() - started);
    }
    return spec.until(obj);
  };

  if (spec.from?.metadata.resourceVersion) {
    resourceVersion = spec.from.metadata.resourceVersion;
    if (observe(spec.from)) return current;
  }

  for (;;) {
    spec.signal?.throwIfAborted();
    const remaining = deadline - now();
    if (remaining <= 0) throw new WaitTimeoutError(spec.description, lastState, spec.timeoutMs);
    let pauseMs: number;
    try {
      if (resourceVersion === undefined) {
        const list = await client.list<T>(spec.type, {
          ...(spec.namespace !== undefined ? { namespace: spec.namespace } : {}),
          fieldSelector: `metadata.name=${spec.name}`,
        });
        resourceVersion = list.metadata.resourceVersion;
        if (observe(list.items[0])) return current;
      }
      const round = await watchUntil(client, spec, resourceVersion, deadline - now(), observe, (rv) => {
        resourceVersion = rv;
      });
      if (round.satisfied) return current;
      if (round.error === undefined) {
        pauseMs = backoff.watchEnded(round.ranMs, round.events);
      } else if (isKubeError(round.error, 'Gone')) {
        resourceVersion = undefined; // too old: list again
        pauseMs = backoff.watchEnded(round.ranMs, round.events);
      } else {
        throw round.error;
      }
    } catch (err) {
      // A watch cut by an apiserver restart lands here; so can the refusals of a server
      // still starting (KubeClient.isTransient), and a list that server did not answer within
      // the request's deadline (its watch cache still filling under load): a read, asked
      // again while the wait's own deadline lasts.
      if (!client.isTransient(err) && !isKubeError(err, 'Timeout')) throw err;
      resourceVersion = undefined;
      pauseMs = backoff.failed();
    }
    await pause(Math.min(pauseMs, deadline - now()), spec.signal);
  }
}

interface WatchRound {
  satisfied: boolean;
  ranMs: number;
  /** Events delivered, bookmarks included. */
  events: number;
  error?: Error;
}

function watchUntil<T extends KubeObject>(
  client: KubeClient,
  spec: WaitSpec<T>,
  resourceVersion: string | undefined,
  remainingMs: number,
  observe: (obj: T | undefined) => boolean,
  setResourceVersion: (rv: string) => void,
): Promise<WatchRound> {
  const started = performance.now();
  return new Promise((resolve) => {
    let satisfied = false;
    let events = 0;
    const watch = client.watch<T>(
      spec.type,
      {
        ...(spec.namespace !== undefined ? { namespace: spec.namespace } : {}),
        fieldSelector: `metadata.name=${spec.name}`,
        ...(resourceVersion !== undefined ? { resourceVersion } : {}),
        timeoutSeconds: Math.max(1, Math.min(300, Math.ceil(remainingMs / 1000))),
        idleTimeoutMs: spec.idleTimeoutMs ?? 60_000,
      },
      (event) => {
        events++;
        if (event.object.metadata.resourceVersion) setResourceVersion(event.object.metadata.resourceVersion);
        if (event.type === 'BOOKMARK') return;
        if (observe(event.type === 'DELETED' ? undefined : event.object)) {
          satisfied = true;
          watch.stop();
        }
      },
    );
    const timer = setTimeout(() => watch.stop(), Math.max(0, remainingMs));
    const stop = (): void => watch.stop();
    spec.signal?.addEventListener('abort', stop, { once: true });
    if (spec.signal?.aborted) stop();
    const end = (error?: Error): void => {
      clearTimeout(timer);
      spec.signal?.removeEventListener('abort', stop);
      const round: WatchRound = { satisfied, ranMs: performance.now() - started, events };
      resolve(error === undefined || satisfied ? round : { ...round, error });
    };
    watch.done.then(
      () => end(),
      (err: unknown) => end(err instanceof Error ? err : new Error(String(err))),
    );
  });
}

export interface RetrySpec<T> {
  /** One try: a value ends the wait, `undefined` tries again after `intervalMs`. */
  attempt: () => Promise<T | undefined>;
  /** "the expired credential to be refused". */
  description: string;
  timeoutMs: number;
  /** Pause between tries (default 250 ms). */
  intervalMs?: number;
  /** What the last try saw, for the timeout error (default "not yet"). */
  lastState?: () => string;
  now?: () => number;
}

/**
 * Repeats `attempt` until it gives a value, which it returns; a try that throws ends the wait
 * with that error. After `timeoutMs` (with at least one try) a {@link WaitTimeoutError}.
 */
export async function retryUntil<T>(spec: RetrySpec<T>): Promise<T> {
  const now = spec.now ?? Date.now;
  const deadline = now() + spec.timeoutMs;
  for (;;) {
    const value = await spec.attempt();
    if (value !== undefined) return value;
    const remaining = deadline - now();
    if (remaining <= 0)
      throw new WaitTimeoutError(spec.description, spec.lastState?.() ?? 'not yet', spec.timeoutMs);
    await pause(Math.min(spec.intervalMs ?? 250, remaining));
  }
}
