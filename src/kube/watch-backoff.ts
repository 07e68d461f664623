// When to open the next list or watch after one ended: the one pacing rule of waitFor and the
// Informer, after client-go's reflector. A watch that ends sooner than minWatchMs without a
// single event counts as a failure, like any error: a load balancer or a broken apiserver
// that answers every watch and closes it at once would otherwise be re-opened thousands of
// times a second. Failures back off exponentially with jitter up to a cap; a watch that
// delivered events, or lasted, resets the count so a healthy stream resumes at once.
// Unlike client-go, the first short watch after a healthy stretch is re-opened at once: a
// server going away ends its watches, and it is the next request, refused, that tells the
// client so (KubeClient then retries the 401s of a server still starting); after a pause that
// request could land on the restarted server already, refusing the credential for good.

export interface WatchBackoffPolicy {
  /** The pause after the first failure (jittered down to half of it). */
  initialMs: number;
  /** No pause grows beyond this. */
  maxMs: number;
  /** A watch ending sooner than this without any event is a failure. */
  minWatchMs: number;
}

export const DEFAULT_WATCH_BACKOFF: WatchBackoffPolicy = { initialMs: 500, maxMs: 10_000, minWatchMs: 1_000 };

export class WatchBackoff {
  private failures = 0;
  private shortInARow = 0;
  private readonly policy: WatchBackoffPolicy;

  constructor(
    policy: Partial<WatchBackoffPolicy> = {},
    private readonly random: () => number = Math.random,
  ) {
    this.policy = { ...DEFAULT_WATCH_BACKOFF, ...policy };
  }

  /** Failures since the last productive watch. */
  get failureCount(): number {
    return this.failures;
  }

  /**
   * A watch ended (closed by the server, idle, or 410 Gone) after `ranMs` having delivered
   * `events` events (bookmarks included): the pause before the next request, 0 for at once.
   */
  watchEnded(ranMs: number, events: number): number {
    if (events > 0 || ranMs >= this.policy.minWatchMs) {
      this.failures = 0;
      this.shortInARow = 0;
      return 0;
    }
    if (this.shortInARow++ === 0 && this.failures === 0) return 0;
    return this.failed();
  }

  /** A list or watch failed: the pause before trying again. */
  failed(): number {
    this.failures++;
    const ceiling = Math.min(this.policy.maxMs, this.policy.initialMs * 2 ** Math.min(this.failures - 1, 30));
    return ceiling / 2 + this.random() * (ceiling / 2);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done);
  });
}
