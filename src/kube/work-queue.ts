// A work queue keyed by object: repeated events for one key merge into one pending
// item, a key is never processed twice at once (a change during processing queues it
// again), and failures are retried with per-key exponential backoff.
import type { Logger } from '../log/logger.js';

export type ReconcileResult = void | { requeueAfterMs: number };

/** How a reconcile ended, as controller-runtime's reconcile_total labels it. */
export type ReconcileOutcome = 'success' | 'error' | 'requeue_after';

/** What a queue reports, the events client-go's workqueue metrics count (see controller/common/metrics.ts). */
export interface WorkQueueMetrics {
  /** Keys waiting, after each change. */
  depth(n: number): void;
  /** A key added that was not already waiting. */
  added(): void;
  /** A key queued again after a failed reconcile. */
  retried(): void;
  /** Seconds between a key's add and the start of its reconcile. */
  waited(seconds: number): void;
  /** Seconds one reconcile took, and how it ended. */
  processed(seconds: number, result: ReconcileOutcome): void;
}

export interface WorkQueueOptions {
  concurrency?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  logger?: Logger;
  /** Called after each failed attempt (metrics, events). */
  onError?: (key: string, err: unknown, attempt: number) => void;
  metrics?: WorkQueueMetrics;
  /** Keys are taken but nothing is processed until start() (the manager: once caches synced). */
  paused?: boolean;
}

export class WorkQueue {
  private readonly pending: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** When each waiting (or dirty) key was added, for the queue-duration metric. */
  private readonly addedAt = new Map<string, number>();
  private running = 0;
  private isStopped = false;
  private paused: boolean;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly reconcile: (key: string) => Promise<ReconcileResult>,
    private readonly options: WorkQueueOptions = {},
  ) {
    this.paused = options.paused ?? false;
  }

  /** Starts processing a queue made paused. */
  start(): void {
    this.paused = false;
    this.pump();
  }

  get stopped(): boolean {
    return this.isStopped;
  }

  get length(): number {
    return this.pending.length;
  }

  add(key: string): void {
    if (this.isStopped) return;
    if (this.queued.has(key) || this.dirty.has(key)) return;
    this.options.metrics?.added();
    if (!this.addedAt.has(key)) this.addedAt.set(key, performance.now());
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    this.enqueue(key);
  }

  private enqueue(key: string): void {
    this.queued.add(key);
    this.pending.push(key);
    this.options.metrics?.depth(this.pending.length);
    this.pump();
  }

  /** Adds the key after a delay; an earlier add of the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.isStopped) return;
    const existing = this.timers.get(key);
    if (existing) clearTimeout(existing);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.timers.set(key, timer);
  }

  retryCount(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  private pump(): void {
    const concurrency = this.options.concurrency ?? 4;
    while (!this.isStopped && !this.paused && this.running < concurrency && this.pending.length > 0) {
      const key = this.pending.shift() as string;
      this.queued.delete(key);
      const added = this.addedAt.get(key);
      this.addedAt.delete(key);
      if (added !== undefined) this.options.metrics?.waited((performance.now() - added) / 1000);
      this.options.metrics?.depth(this.pending.length);
      this.processing.add(key);
      this.running++;
      void this.process(key);
    }
    if (this.running === 0 && this.pending.length === 0) {
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  private async process(key: string): Promise<void> {
    const started = performance.now();
    const done = (result: ReconcileOutcome): void =>
      this.options.metrics?.processed((performance.now() - started) / 1000, result);
    try {
      const result = await this.reconcile(key);
      this.failures.delete(key);
      const requeue = result && result.requeueAfterMs >= 0;
      done(requeue ? 'requeue_after' : 'success');
      if (requeue) this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      done('error');
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      this.options.onError?.(key, err, attempt);
      this.options.logger?.warn('reconcile failed; will retry', {
        key,
        attempt,
        error: err instanceof Error ? err.message : String(err),
      });
      const base = this.options.baseDelayMs ?? 200;
      const max = this.options.maxDelayMs ?? 60_000;
      this.options.metrics?.retried();
      this.addAfter(key, Math.min(max, base * 2 ** (attempt - 1)));
    } finally {
      this.processing.delete(key);
      this.running--;
      // Added (and counted) while it was being processed: it waits from that add on.
      if (this.dirty.delete(key) && !this.isStopped) this.enqueue(key);
      this.pump();
    }
  }

  /** Resolves when nothing is queued or running (timers aside). */
  idle(): Promise<void> {
    if (this.running === 0 && this.pending.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  async stop(): Promise<void> {
    this.isStopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.pending.length = 0;
    this.queued.clear();
    this.addedAt.clear();
    this.options.metrics?.depth(0);
    while (this.running > 0) await new Promise((r) => setTimeout(r, 10));
  }
}
