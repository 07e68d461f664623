// Takes the controller's leader-election Lease away from whoever holds it, for a while, so
// that no replica acts while `controller remove-hooks` removes the hooks (before an
// uninstall deletes the Deployment). Unlike leader election this does not wait for the
// holder to let go: a healthy leader renews forever. The replicas honour the Lease's
// leaseDurationSeconds as written (leader-election.ts), so none takes it back before the
// hold runs out; the old leader stops acting within its renew deadline, which is shorter
// than the lease duration it had written, and that is how long the caller must wait.
import { isKubeError, type KubeClient } from '../kube/index.js';
import { Resources, type KubeObject } from '../kube/resources.js';

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

export interface LeaseHold {
  /** The holder the Lease was taken from ('' when nobody held it). */
  previousHolder: string;
  /** How long the previous holder may still act: its written lease duration (0 when none). */
  previousHolderMayActMs: number;
}

const microTime = (ms: number): string => new Date(ms).toISOString().replace(/(\.\d{3})Z$/, '$1000Z');

export async function holdLease(
  client: KubeClient,
  opts: { namespace: string; name: string; identity: string; holdMs: number; now?: () => number },
): Promise<LeaseHold> {
  const now = opts.now ?? Date.now;
  const durationSeconds = Math.max(1, Math.ceil(opts.holdMs / 1000));
  for (let attempt = 1; ; attempt++) {
    const lease = await client.find<Lease>(Resources.lease, { namespace: opts.namespace, name: opts.name });
    const at = microTime(now());
    try {
      if (!lease) {
        await client.create<Lease>(Resources.lease, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { namespace: opts.namespace, name: opts.name },
          spec: {
            holderIdentity: opts.identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: at,
            renewTime: at,
            leaseTransitions: 0,
          },
        });
        return { previousHolder: '', previousHolderMayActMs: 0 };
      }
      const spec = lease.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      await client.update<Lease>(Resources.lease, {
        ...lease,
        spec: {
          ...spec,
          holderIdentity: opts.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: at,
          renewTime: at,
          leaseTransitions: (spec.leaseTransitions ?? 0) + (holder && holder !== opts.identity ? 1 : 0),
        },
      });
      const othersHeld = holder !== '' && holder !== opts.identity;
      return {
        previousHolder: othersHeld ? holder : '',
        previousHolderMayActMs: othersHeld ? (spec.leaseDurationSeconds ?? 0) * 1000 : 0,
      };
    } catch (err) {
      // A replica renewed (or created) in between: read again and take it from there.
      const raced = isKubeError(err, 'Conflict', 'AlreadyExists');
      if (!raced || attempt >= 10) throw err;
    }
  }
}
