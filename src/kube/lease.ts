// The one coordination.k8s.io/v1 Lease of the project, shaped like client-go's
// resourcelock.LeaseLock: a lock is read as a record (who holds it, for how long, since
// when), created, or updated as a whole with the resourceVersion of the Lease last read, so
// that two writers racing for it cannot both win (the loser gets a Conflict). Leader
// election (controller/process/leader-election.ts) and `remove-hooks` (controller/remove-hooks/lease-hold.ts)
// decide what to write; this module is the only one that knows the object.
import type { KubeClient } from './client.js';
import { ignoreNotFound, KubeError } from './errors.js';
import { apiVersionOf, describeOperation, Resources, resourcePath, type KubeObject } from './resources.js';
import { keyText } from '../api/object-key.js';

/** What a Lease says, as client-go's LeaderElectionRecord (holder '' when nobody holds it). */
export interface LeaderElectionRecord {
  holderIdentity: string;
  /** As written; undefined when the Lease has none. */
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaderTransitions: number;
}

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

/** A Lease's MicroTime: RFC 3339 with microseconds, which a Lease's times must carry. */
export const microTime = (ms: number): string => new Date(ms).toISOString().replace(/(\.\d{3})Z$/, '$1000Z');

export interface LeaseRequestOptions {
  /** This request's deadline (leader election bounds each one by its renew deadline). */
  timeoutMs?: number;
}

export class LeaseLock {
  /** The Lease as last read or written: an update carries its resourceVersion. */
  private observed: Lease | undefined;

  constructor(
    private readonly client: KubeClient,
    readonly at: { namespace: string; name: string },
  ) {}

  /** "namespace/name", for logs. */
  describe(): string {
    return keyText(this.at.namespace, this.at.name);
  }

  /** The record, or undefined when there is no Lease yet. */
  async get(opts: LeaseRequestOptions = {}): Promise<LeaderElectionRecord | undefined> {
    this.observed = await this.request<Lease>('get', opts).catch(ignoreNotFound);
    return this.observed && recordOf(this.observed);
  }

  /** Creates the Lease holding `record`; AlreadyExists when another writer was first. */
  async create(record: LeaderElectionRecord, opts: LeaseRequestOptions = {}): Promise<void> {
    this.observed = await this.request<Lease>('create', opts, {
      apiVersion: apiVersionOf(Resources.lease),
      kind: Resources.lease.kind,
      metadata: { namespace: this.at.namespace, name: this.at.name },
      spec: specOf(record),
    });
  }

  /** Replaces the record of the Lease last read; Conflict when it changed since. */
  async update(record: LeaderElectionRecord, opts: LeaseRequestOptions = {}): Promise<void> {
    if (!this.observed) throw new Error(`update Lease ${this.describe()}: read it first`);
    this.observed = await this.request<Lease>('update', opts, {
      ...this.observed,
      spec: { ...this.observed.spec, ...specOf(record) },
    });
  }

  private request<T>(verb: 'get' | 'create' | 'update', opts: LeaseRequestOptions, body?: Lease): Promise<T> {
    const { namespace, name } = this.at;
    const operation = describeOperation(verb, Resources.lease, { namespace, name });
    if (opts.timeoutMs !== undefined && opts.timeoutMs <= 0)
      return Promise.reject(new KubeError('Timeout', operation, `${operation}: deadline passed`));
    return this.client.call<T>({
      method: verb === 'get' ? 'GET' : verb === 'create' ? 'POST' : 'PUT',
      path: resourcePath(Resources.lease, verb === 'create' ? { namespace } : { namespace, name }),
      ...(body ? { body } : {}),
      operation,
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    });
  }
}

function recordOf(lease: Lease): LeaderElectionRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? '',
    ...(spec.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: spec.leaseDurationSeconds } : {}),
    ...(spec.acquireTime ? { acquireTime: spec.acquireTime } : {}),
    ...(spec.renewTime ? { renewTime: spec.renewTime } : {}),
    leaderTransitions: spec.leaseTransitions ?? 0,
  };
}

/** A released Lease (holder '') is written with holderIdentity null, as the API stores "none". */
function specOf(record: LeaderElectionRecord): NonNullable<Lease['spec']> {
  return {
    holderIdentity: record.holderIdentity || null,
    ...(record.leaseDurationSeconds !== undefined
      ? { leaseDurationSeconds: record.leaseDurationSeconds }
      : {}),
    ...(record.acquireTime !== undefined ? { acquireTime: record.acquireTime } : {}),
    ...(record.renewTime !== undefined ? { renewTime: record.renewTime } : {}),
    leaseTransitions: record.leaderTransitions,
  };
}
