import { isAlreadyExists, isConflict, KubeClient } from '../../kube/index.js';
import { LeaseLock, microTime } from '../../kube/lease.js';
import type { LoadedKubeconfig } from '../../kube/kubeconfig-loading.js';
import type { Logger } from '../../log/logger.js';
import { keyText } from '../../api/object-key.js';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  logger: Logger;
  now?: () => number;
}

/**
 * Leader election on a coordination.k8s.io/v1 Lease, the protocol of client-go's
 * leaderelection: every write is a PUT carrying the resourceVersion read just before, so
 * two replicas racing for the Lease cannot both win (the loser gets a Conflict). Another
 * holder's Lease is taken over only after it went unrenewed for leaseDuration as measured
 * on this replica's clock (never by comparing clocks across machines).
 *
 * The leader's side of that contract is the renew deadline: a leader that has not renewed
 * for renewDeadline stops leading, whatever its requests are doing, so that it has stopped
 * before any standby can take over (leaseDuration > renewDeadline). Hence its own client
 * (not queued behind the controller's requests), one attempt per request and no retries,
 * each request bounded by the time left to the deadline, and a timer that steps down at
 * the deadline even while a request is still in flight.
 */
export class LeaderElector {
  private observed: { record: string; at: number } | undefined;
  private leading = false;
  private stopped = false;
  /** Leadership was lost: an elector does not campaign again (the process exits and starts anew). */
  private lost = false;
  private timer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private lastRenew = 0;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private ownsClient = false;
  private readonly lock: LeaseLock;

  constructor(
    private readonly client: KubeClient,
    private readonly options: LeaderElectionOptions,
  ) {
    this.lock = new LeaseLock(client, { namespace: options.namespace, name: options.name });
  }

  /**
   * An elector with a client of its own for the kubeconfig: one attempt per request, no
   * retries, so that a request never outlives the time it was given.
   */
  static forKubeconfig(loaded: LoadedKubeconfig, options: LeaderElectionOptions): LeaderElector {
    const client = KubeClient.fromLoaded(loaded, {
      requestTimeoutMs: options.renewDeadlineMs,
      retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
      compression: false,
    });
    const elector = new LeaderElector(client, options);
    elector.ownsClient = true;
    return elector;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops campaigning; a leader gives the Lease up so that another replica takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    await this.loop;
    if (this.leading) {
      this.leading = false;
      clearTimeout(this.deadlineTimer);
      await this.release().catch((err: unknown) =>
        this.options.logger.warn('could not release the Lease', { error: String(err) }),
      );
      this.options.onStoppedLeading();
    }
    if (this.ownsClient) this.client.close();
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private async run(): Promise<void> {
    while (!this.stopped && !this.lost) {
      let ok = false;
      // A leader's attempt ends at its renew deadline; a candidate's within one renew deadline.
      const deadline = this.leading
        ? this.lastRenew + this.options.renewDeadlineMs
        : this.now() + this.options.renewDeadlineMs;
      const attemptStart = this.now();
      try {
        ok = await this.tryAcquireOrRenew(deadline);
      } catch (err) {
        this.options.logger.warn('Lease update failed', {
          lease: this.options.name,
          error: err instanceof Error ? err.message : String(err),
        });
      }
      if (this.stopped || this.lost) break;
      if (ok) {
        // The renewal counts from when it was sent: the server may have applied it any time after.
        this.lastRenew = attemptStart;
        this.armDeadline();
        if (!this.leading) {
          this.leading = true;
          this.options.logger.info('became leader', {
            lease: keyText(this.options.namespace, this.options.name),
            identity: this.options.identity,
          });
          this.options.onStartedLeading();
        }
      } else if (this.leading && this.now() - this.lastRenew >= this.options.renewDeadlineMs) {
        this.stepDown();
        break;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, this.options.retryPeriodMs);
      });
    }
  }

  /** Steps down at the renew deadline unless a renewal comes first (it re-arms this timer). */
  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    const left = this.lastRenew + this.options.renewDeadlineMs - this.now();
    this.deadlineTimer = setTimeout(() => this.stepDown(), Math.max(0, left));
  }

  private stepDown(): void {
    if (!this.leading || this.lost) return;
    this.leading = false;
    this.lost = true;
    clearTimeout(this.deadlineTimer);
    this.options.logger.error('lost leadership: the Lease was not renewed within the renew deadline', {
      lease: this.options.name,
      renewDeadlineMs: this.options.renewDeadlineMs,
      sinceLastRenewMs: this.now() - this.lastRenew,
    });
    this.wake?.();
    this.options.onStoppedLeading();
  }

  private async tryAcquireOrRenew(deadline: number): Promise<boolean> {
    const { identity } = this.options;
    const now = this.now();
    const timeout = (): { timeoutMs: number } => ({ timeoutMs: deadline - this.now() });
    const durationSeconds = Math.ceil(this.options.leaseDurationMs / 1000);
    const record = await this.lock.get(timeout());
    if (!record) {
      try {
        await this.lock.create(
          {
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaderTransitions: 0,
          },
          timeout(),
        );
        return true;
      } catch (err) {
        if (isAlreadyExists(err)) return false;
        throw err;
      }
    }
    const holder = record.holderIdentity;
    const seen = `${holder}|${record.renewTime ?? ''}`;
    if (this.observed?.record !== seen) this.observed = { record: seen, at: now };
    const heldByOther = holder !== '' && holder !== identity;
    const ttl = (record.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (heldByOther && this.observed.at + ttl > now) return false;
    const takingOver = holder !== identity;
    try {
      await this.lock.update(
        {
          ...record,
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          renewTime: microTime(now),
          ...(takingOver
            ? { acquireTime: microTime(now), leaderTransitions: record.leaderTransitions + (holder ? 1 : 0) }
            : {}),
        },
        timeout(),
      );
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  private async release(): Promise<void> {
    const record = await this.lock.get();
    if (record?.holderIdentity !== this.options.identity) return;
    await this.lock.update({
      ...record,
      holderIdentity: '',
      leaseDurationSeconds: 1,
      renewTime: microTime(this.now()),
    });
  }
}
