// Leader election on a coordination.k8s.io/v1 Lease, the protocol of client-go's
// leaderelection: every write is a PUT carrying the resourceVersion read just before, so
// two replicas racing for the Lease cannot both win (the loser gets a Conflict). Another
// holder's Lease is taken over only after it went unrenewed for leaseDuration as measured
// on this replica's clock (never by comparing clocks across machines).
import { KubeError, type KubeClient } from '../kube/index.js';
import { Resources, type KubeObject } from '../kube/resources.js';
import type { Logger } from '../log/logger.js';

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

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

const microTime = (ms: number): string => new Date(ms).toISOString().replace(/(\.\d{3})Z$/, '$1000Z');

export class LeaderElector {
  private observed: { record: string; at: number } | undefined;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private lastRenew = 0;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly options: LeaderElectionOptions,
  ) {}

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
      await this.release().catch((err: unknown) =>
        this.options.logger.warn('could not release the Lease', { error: String(err) }),
      );
      this.options.onStoppedLeading();
    }
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        this.options.logger.warn('Lease update failed', {
          lease: this.options.name,
          error: err instanceof Error ? err.message : String(err),
        });
      }
      if (this.stopped) break;
      if (ok) {
        this.lastRenew = this.now();
        if (!this.leading) {
          this.leading = true;
          this.options.logger.info('became leader', {
            lease: `${this.options.namespace}/${this.options.name}`,
            identity: this.options.identity,
          });
          this.options.onStartedLeading();
        }
      } else if (this.leading && this.now() - this.lastRenew >= this.options.renewDeadlineMs) {
        this.leading = false;
        this.options.logger.error('lost leadership: the Lease was not renewed in time', {
          lease: this.options.name,
        });
        this.options.onStoppedLeading();
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, this.options.retryPeriodMs);
      });
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const now = this.now();
    const durationSeconds = Math.ceil(this.options.leaseDurationMs / 1000);
    const lease = await this.client.find<Lease>(Resources.lease, { namespace, name });
    if (!lease) {
      try {
        await this.client.create<Lease>(Resources.lease, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        return true;
      } catch (err) {
        if (err instanceof KubeError && err.kind === 'AlreadyExists') return false;
        throw err;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = `${holder}|${spec.renewTime ?? ''}`;
    if (this.observed?.record !== record) this.observed = { record, at: now };
    const heldByOther = holder !== '' && holder !== identity;
    const ttl = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (heldByOther && this.observed.at + ttl > now) return false;
    const takingOver = holder !== identity;
    try {
      await this.client.update<Lease>(Resources.lease, {
        ...lease,
        spec: {
          ...spec,
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          renewTime: microTime(now),
          ...(takingOver
            ? {
                acquireTime: microTime(now),
                leaseTransitions: (spec.leaseTransitions ?? 0) + (holder ? 1 : 0),
              }
            : {}),
        },
      });
      return true;
    } catch (err) {
      if (err instanceof KubeError && err.kind === 'Conflict') return false;
      throw err;
    }
  }

  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    const lease = await this.client.find<Lease>(Resources.lease, { namespace, name });
    if (lease?.spec?.holderIdentity !== identity) return;
    await this.client.update<Lease>(Resources.lease, {
      ...lease,
      spec: {
        ...lease.spec,
        holderIdentity: null,
        leaseDurationSeconds: 1,
        renewTime: microTime(this.now()),
      },
    });
  }
}
