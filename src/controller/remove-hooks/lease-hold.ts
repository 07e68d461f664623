// Takes the controller's leader-election Lease away from whoever holds it, for a while, so
// that no replica acts while `controller remove-hooks` removes the hooks (before an
// uninstall deletes the Deployment). Unlike leader election this does not wait for the
// holder to let go: a healthy leader renews forever. The replicas honour the Lease's
// leaseDurationSeconds as written (leader-election.ts), so none takes it back before the
// hold runs out; the old leader stops acting within its renew deadline, which is shorter
// than the lease duration it had written, and that is how long the caller must wait.
import { isKubeError, type KubeClient } from '../../kube/index.js';
import { LeaseLock, microTime } from '../../kube/lease.js';

export interface LeaseHold {
  /** The holder the Lease was taken from ('' when nobody held it). */
  previousHolder: string;
  /** How long the previous holder may still act: its written lease duration (0 when none). */
  previousHolderMayActMs: number;
}

export async function holdLease(
  client: KubeClient,
  opts: { namespace: string; name: string; identity: string; holdMs: number; now?: () => number },
): Promise<LeaseHold> {
  const now = opts.now ?? Date.now;
  const lock = new LeaseLock(client, { namespace: opts.namespace, name: opts.name });
  const leaseDurationSeconds = Math.max(1, Math.ceil(opts.holdMs / 1000));
  for (let attempt = 1; ; attempt++) {
    const record = await lock.get();
    const at = microTime(now());
    const mine = { holderIdentity: opts.identity, leaseDurationSeconds, acquireTime: at, renewTime: at };
    try {
      if (!record) {
        await lock.create({ ...mine, leaderTransitions: 0 });
        return { previousHolder: '', previousHolderMayActMs: 0 };
      }
      const holder = record.holderIdentity;
      const othersHeld = holder !== '' && holder !== opts.identity;
      await lock.update({ ...mine, leaderTransitions: record.leaderTransitions + (othersHeld ? 1 : 0) });
      return {
        previousHolder: othersHeld ? holder : '',
        previousHolderMayActMs: othersHeld ? (record.leaseDurationSeconds ?? 0) * 1000 : 0,
      };
    } catch (err) {
      // A replica renewed (or created) in between: read again and take it from there.
      if (!isKubeError(err, 'Conflict', 'AlreadyExists') || attempt >= 10) throw err;
    }
  }
}
