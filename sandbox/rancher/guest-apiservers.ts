// The guest clusters' own kube-apiservers (control-plane/guest-apiserver.ts) by
// "namespace/cluster": started once however many reconciles ask at the same time, stopped one
// by one or all together.
import type { Logger } from '../../src/log/logger.js';
import { residentMiB, startGuestApiserver, type GuestApiserver } from '../control-plane/guest-apiserver.js';

/** Start time and resident set of a guest apiserver, for the measurements. */
export interface GuestApiserverFigures {
  cluster: string;
  startMs: number;
  rssMiB: number | undefined;
}

/** The running guest apiservers, each on Rancher's etcd under its own prefix. */
export class GuestApiservers {
  /** Running guest apiservers by "namespace/cluster". */
  readonly running = new Map<string, GuestApiserver>();
  private readonly starting = new Map<string, Promise<GuestApiserver>>();
  private stopped = false;

  constructor(private readonly opts: { etcdUrl: string; logger: Logger }) {}

  /** The cluster's apiserver: the running one, the one starting, or a new one. */
  apiserverFor(key: string): Promise<GuestApiserver> {
    const known = this.running.get(key);
    if (known) return Promise.resolve(known);
    let pending = this.starting.get(key);
    if (!pending) {
      pending = this.start(key).finally(() => this.starting.delete(key));
      this.starting.set(key, pending);
    }
    return pending;
  }

  private async start(key: string): Promise<GuestApiserver> {
    const apiserver = await startGuestApiserver({ name: key, etcdUrl: this.opts.etcdUrl });
    if (this.stopped) {
      await apiserver.stop();
      throw new Error('stopped');
    }
    this.running.set(key, apiserver);
    this.opts.logger.info('guest apiserver started', {
      cluster: key,
      server: apiserver.server,
      ms: Math.round(apiserver.startMs),
    });
    return apiserver;
  }

  /** Stops the cluster's apiserver, if one runs. */
  async stopOne(key: string): Promise<void> {
    const apiserver = this.running.get(key);
    this.running.delete(key);
    await apiserver?.stop();
    if (apiserver) this.opts.logger.info('guest apiserver stopped', { cluster: key });
  }

  /** Stops every apiserver, those still starting too; none starts afterwards. */
  async stopAll(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.starting.values()]);
    await Promise.all([...this.running.keys()].map((k) => this.stopOne(k)));
  }

  /** Start time and resident set of each running apiserver. */
  figures(): GuestApiserverFigures[] {
    return [...this.running.values()].map((a) => ({
      cluster: a.name,
      startMs: Math.round(a.startMs),
      rssMiB: residentMiB(a.pid),
    }));
  }
}
