// Leader election on a real apiserver: of replicas racing for one Lease exactly one leads;
// a leader that stops gives the Lease up and another takes over at once; a leader that
// vanishes without giving it up is replaced only after the lease duration. And the LeaseLock
// both leader election and remove-hooks write through.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isKubeError } from '../../src/kube/errors.js';
import { LeaseLock, microTime } from '../../src/kube/lease.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { silentLogger } from '../../src/log/logger.js';
import { LeaderElector } from '../../src/controller/process/leader-election.js';
import { createNamespace } from '../../sandbox/control-plane/access.js';
import { useControlPlane } from '../support/control-plane-fixture.js';
import { eventually } from '../support/eventually.js';

const fixture = useControlPlane({ name: 'lease', crds: false, controllerManager: false });

function replica(namespace: string, identity: string, leaseDurationMs = 2000) {
  // The renew deadline is client-go's default proportion of the lease duration (10 s of 15 s).
  const renewDeadlineMs = Math.round((leaseDurationMs * 2) / 3);
  const state = { leading: false, started: 0, stopped: 0 };
  const elector = new LeaderElector(fixture.cp.admin, {
    namespace,
    name: 'hm-test',
    identity,
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs: 100,
    logger: silentLogger,
    onStartedLeading: () => {
      state.leading = true;
      state.started++;
    },
    onStoppedLeading: () => {
      state.leading = false;
      state.stopped++;
    },
  });
  return { elector, state, identity };
}

const until = (what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> =>
  eventually(what, () => Promise.resolve(cond()), timeoutMs);

describe('LeaderElector', () => {
  it('lets exactly one of three racing replicas lead, and hands over at once on a clean stop', async () => {
    const namespace = await createNamespace(fixture.cp.admin, 'lease');
    // A long lease: a takeover well under its duration can only be the released Lease being
    // taken, however slowly a loaded machine answers, and no renewal misses its deadline.
    const leaseDurationMs = 20_000;
    const replicas = ['a', 'b', 'c'].map((id) => replica(namespace, id, leaseDurationMs));
    replicas.forEach((r) => r.elector.start());
    await until('a replica to lead', () => replicas.some((r) => r.state.leading));
    await new Promise((r) => setTimeout(r, 600)); // several renew rounds: still one leader
    const leaders = replicas.filter((r) => r.state.leading);
    assert.equal(leaders.length, 1);
    const first = leaders[0] as (typeof replicas)[number];
    const started = Date.now();
    await first.elector.stop();
    await until('another replica to lead', () => replicas.some((r) => r !== first && r.state.leading));
    const tookMs = Date.now() - started;
    assert.ok(
      tookMs < leaseDurationMs / 2,
      `a released Lease is taken without waiting for its duration (${tookMs} ms)`,
    );
    assert.equal(replicas.filter((r) => r.state.leading).length, 1);
    for (const r of replicas) await r.elector.stop();
  });

  it('takes over a vanished leader only after the lease duration', async () => {
    const namespace = await createNamespace(fixture.cp.admin, 'lease');
    // A replica that crashed while leading: its Lease stays, renewed just now, never again.
    const now = microTime(Date.now());
    await fixture.cp.admin.create(Resources.lease, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'hm-test', namespace },
      spec: {
        holderIdentity: 'crashed',
        leaseDurationSeconds: 2,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      },
    } as KubeObject);
    const next = replica(namespace, 'next', 2000);
    const started = Date.now();
    next.elector.start();
    await until('the next replica to lead', () => next.state.leading, 10_000);
    assert.ok(Date.now() - started >= 1800, `took over after ${Date.now() - started} ms`);
    const lease = await fixture.cp.admin.get<
      KubeObject & { spec?: { holderIdentity?: string; leaseTransitions?: number } }
    >(Resources.lease, { namespace, name: 'hm-test' });
    assert.equal(lease.spec?.holderIdentity, 'next');
    assert.equal(lease.spec?.leaseTransitions, 1);
    await next.elector.stop();
  });
});

describe('LeaseLock (src/kube/lease.ts, the one Lease of leader election and remove-hooks)', () => {
  const record = (holderIdentity: string, leaderTransitions = 0) => {
    const at = microTime(Date.now());
    return { holderIdentity, leaseDurationSeconds: 15, acquireTime: at, renewTime: at, leaderTransitions };
  };

  it('reads none, creates once, and refuses a write made on a stale read', async () => {
    const namespace = await createNamespace(fixture.cp.admin, 'lease');
    const at = { namespace, name: 'lock' };
    const mine = new LeaseLock(fixture.cp.admin, at);
    const theirs = new LeaseLock(fixture.cp.admin, at);
    assert.equal(await mine.get(), undefined);
    await mine.create(record('a'));
    await assert.rejects(theirs.create(record('b')), (err: unknown) => isKubeError(err, 'AlreadyExists'));
    const seen = await theirs.get();
    assert.equal(seen?.holderIdentity, 'a');
    assert.equal(seen?.leaseDurationSeconds, 15);
    await mine.update(record('a'));
    // theirs read before that renewal: its write is a Conflict, never a silent takeover.
    await assert.rejects(theirs.update(record('b', 1)), (err: unknown) => isKubeError(err, 'Conflict'));
    await theirs.get();
    await theirs.update(record('b', 1));
    assert.deepEqual(
      { ...(await mine.get()), acquireTime: undefined, renewTime: undefined },
      {
        holderIdentity: 'b',
        leaseDurationSeconds: 15,
        leaderTransitions: 1,
        acquireTime: undefined,
        renewTime: undefined,
      },
    );
  });

  it('writes a released Lease with no holder, and times with microseconds', async () => {
    const namespace = await createNamespace(fixture.cp.admin, 'lease');
    const lock = new LeaseLock(fixture.cp.admin, { namespace, name: 'lock' });
    await lock.create(record('a'));
    await lock.update({ ...record('a'), holderIdentity: '', leaseDurationSeconds: 1 });
    const raw = await fixture.cp.admin.get<KubeObject & { spec?: Record<string, unknown> }>(Resources.lease, {
      namespace,
      name: 'lock',
    });
    assert.equal(raw.spec?.holderIdentity, undefined, 'null, which the apiserver drops');
    assert.match(String(raw.spec?.renewTime), /\.\d{6}Z$/);
    assert.equal((await lock.get())?.holderIdentity, '');
    await assert.rejects(lock.get({ timeoutMs: 0 }), /deadline passed/);
  });
});
