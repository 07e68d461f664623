// Faults between the driver and Harvester, injected at the sandbox's front proxy: 429 with
// Retry-After and 500s (bounded retries, jittered backoff, the server's delay honoured but
// capped, a persistent error ending in a clear message), a watch cut in the middle of a wait
// (it resumes where it was, without listing again), and another writer changing the VM
// between the removal's read and its write (409: the plan is made again from a fresh read).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANNOTATION_REMOVED_PVCS, ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { DEFAULT_RETRY } from '../../src/kube/client.js';
import { isConflict, isKubeError } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { MachineState } from '../../src/driver/machine-driver.js';
import { useSandbox } from '../support/sandbox-fixture.js';
import { tempStore } from '../support/machines.js';
import { vmPvcNames, waitPvcExists, waitPvcGone, recordedVolume } from '../support/volumes.js';
import { eventually, failureOf, livePvcUids, pauseHook, vmsOfMachine, watchedMachine } from './helpers.js';

const fixture = useSandbox();
const store = tempStore();
const ns = 'default';

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const vmPath = (name: string): RegExp => new RegExp(`/virtualmachines/${escape(name)}$`);
/** The namespace's VM list, which each removal plan starts from. */
const vmListPath = /\/namespaces\/default\/virtualmachines$/;

/** One running machine for the read-path faults, made by the first test that needs it. */
const steady = 'af-steady-pool1-a1b2c-x1';
let steadyReady: Promise<void> | undefined;
function withSteadyMachine(): Promise<void> {
  return (steadyReady ??= (async () => {
    const m = watchedMachine({
      name: steady,
      kubeconfig: fixture.sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'af-steady',
    });
    await m.driver.create();
    m.driver.close();
  })());
}

/** A client's pause before a retry, really waited, its length pushed to `pauses`. */
const recordingSleep =
  (pauses: number[]) =>
  (ms: number): Promise<void> => {
    pauses.push(ms);
    return new Promise((resolve) => setTimeout(resolve, ms));
  };

/**
 * A driver for the steady machine that stamps the time of every GET of its VM and records each
 * pause its client asks for before a retry. The pauses are exact; the gaps between requests
 * are at least those pauses, plus a round trip that a loaded machine stretches (so no test
 * bounds a gap from above).
 */
function timedReader(clientOptions: { retry?: typeof DEFAULT_RETRY } = {}) {
  const stamps: number[] = [];
  const pauses: number[] = [];
  const m = watchedMachine({
    name: steady,
    kubeconfig: fixture.sandbox.kubeconfigs.harvesterDirect,
    storePath: store,
    clusterName: 'af-steady',
    clientOptions: {
      ...clientOptions,
      onRequest: (method, path) => {
        if (method === 'GET' && vmPath(steady).test(path)) stamps.push(performance.now());
      },
      sleep: recordingSleep(pauses),
    },
  });
  const gaps = (): number[] => stamps.slice(1).map((t, i) => t - (stamps[i] ?? t));
  return { driver: m.driver, stamps, pauses, gaps };
}

describe('429 and 500 answers', () => {
  it('429 with Retry-After: waits what the server asked, then succeeds', async () => {
    await withSteadyMachine();
    const { proxy } = fixture.sandbox;
    const r = timedReader();
    proxy.faults.resetCounts();
    proxy.faults.inject({
      method: 'GET',
      pathPattern: vmPath(steady),
      status: 429,
      times: 2,
      retryAfterSeconds: 1,
    });
    assert.equal(await r.driver.getState(), MachineState.Running);
    r.driver.close();
    assert.equal(
      proxy.faults.count({ method: 'GET', pathPattern: vmPath(steady) }),
      3,
      'two refused, one answered',
    );
    // Exactly what the server asked, no backoff of our own on top; and really waited.
    assert.deepEqual(r.pauses, [1_000, 1_000]);
    for (const gap of r.gaps()) assert.ok(gap >= 990, `waited ${gap.toFixed(0)} ms for Retry-After: 1`);
  });

  it('500: retried with jittered exponential backoff (0.125–0.25 s, then 0.25–0.5 s)', async () => {
    await withSteadyMachine();
    const { proxy } = fixture.sandbox;
    const r = timedReader();
    proxy.faults.inject({ method: 'GET', pathPattern: vmPath(steady), status: 500, times: 2 });
    assert.equal(await r.driver.getState(), MachineState.Running);
    r.driver.close();
    const [first = 0, second = 0] = r.pauses;
    const base = DEFAULT_RETRY.baseDelayMs;
    assert.equal(r.stamps.length, 3);
    assert.equal(r.pauses.length, 2);
    assert.ok(first >= base / 2 && first <= base, `first pause ${first.toFixed(0)} ms`);
    assert.ok(second >= base && second <= 2 * base, `second pause ${second.toFixed(0)} ms`);
    r.gaps().forEach((gap, i) =>
      assert.ok(gap >= (r.pauses[i] ?? 0) - 5, `gap ${i + 1}: ${gap.toFixed(0)} ms`),
    );
  });

  it('a hostile Retry-After (an hour) is capped at four times the longest backoff', async () => {
    await withSteadyMachine();
    const { proxy } = fixture.sandbox;
    const r = timedReader({ retry: { attempts: 2, baseDelayMs: 50, maxDelayMs: 250 } });
    proxy.faults.inject({
      method: 'GET',
      pathPattern: vmPath(steady),
      status: 429,
      times: 1,
      retryAfterSeconds: 3600,
    });
    const started = performance.now();
    assert.equal(await r.driver.getState(), MachineState.Running);
    r.driver.close();
    const took = performance.now() - started;
    assert.deepEqual(r.pauses, [1_000], 'four times the longest backoff (250 ms), not the hour asked');
    assert.ok(took >= 990, `waited ${took.toFixed(0)} ms`);
  });

  it('a persistent 500 on the VM create: fails after the bounded attempts, clearly, having created nothing; a rerun creates one VM', async () => {
    const { sandbox } = fixture;
    const { proxy } = sandbox;
    const name = 'af-p500-pool1-b2c3d-x1';
    const spec = {
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'af-p500',
    };
    const create = /\/namespaces\/default\/virtualmachines$/;
    proxy.faults.resetCounts();
    proxy.faults.inject({ method: 'POST', pathPattern: create, status: 500, times: 1_000 });
    const started = performance.now();
    const pauses: number[] = [];
    const m = watchedMachine({ ...spec, clientOptions: { sleep: recordingSleep(pauses) } });
    const err = await failureOf(m.driver.create());
    const took = performance.now() - started;
    proxy.faults.clear();
    m.driver.close();
    assert.ok(isKubeError(err, 'ServerError'), String(err));
    assert.match(
      err.message,
      new RegExp(
        `^create virtualmachines\\.kubevirt\\.io default/${name}: .*\\(HTTP 500 from https://127\\.0\\.0\\.1:\\d+\\)$`,
      ),
    );
    assert.equal(proxy.faults.count({ method: 'POST', pathPattern: create }), DEFAULT_RETRY.attempts);
    // Four pauses of 1/2 to 1 times 0.25, 0.5, 1 and 2 s, really waited.
    assert.equal(pauses.length, DEFAULT_RETRY.attempts - 1);
    pauses.forEach((pause, i) => {
      const full = DEFAULT_RETRY.baseDelayMs * 2 ** i;
      assert.ok(pause >= full / 2 && pause <= full, `pause ${i + 1}: ${pause.toFixed(0)} ms`);
    });
    const paused = pauses.reduce((a, b) => a + b, 0);
    assert.ok(took >= paused - 5, `gave up after ${took.toFixed(0)} ms, ${paused.toFixed(0)} ms of pauses`);
    assert.deepEqual(await vmsOfMachine(sandbox.harvester.admin, ns, name), [], 'nothing was created');

    const again = watchedMachine(spec);
    await again.driver.create();
    assert.equal((await vmsOfMachine(sandbox.harvester.admin, ns, name)).length, 1);
    await again.driver.remove();
    again.driver.close();
  });
});

describe('a watch dropped in the middle of a wait', () => {
  it('the wait watches again from where it was (no new list) and sees the IP at once', async () => {
    const { sandbox } = fixture;
    const { proxy } = sandbox;
    const name = 'af-watch-pool1-c3d4e-x1';
    const vmis = /\/virtualmachineinstances$/;
    sandbox.standIns.configure({ noIp: (vm) => vm.name === name });
    try {
      const m = watchedMachine({
        name,
        kubeconfig: sandbox.kubeconfigs.harvesterDirect,
        storePath: store,
        clusterName: 'af-w',
      });
      const creating = failureOf(m.driver.create());
      await m.progressWhere(
        (e) => /report an IP address/.test(e.waitingFor) && /none with a usable address/.test(e.state),
      );
      // The wait reports what its list showed, then opens its watch: cut it once it is open.
      // Only the driver's watches pass the proxy (the stand-ins talk to the apiserver).
      await eventually('the wait has a watch to cut', () => Promise.resolve(proxy.faults.dropWatches() >= 1));
      const watches = proxy.faults.count({ method: 'WATCH', pathPattern: vmis });
      const lists = proxy.faults.count({ method: 'GET', pathPattern: vmis });
      await eventually('the wait watches again', () =>
        Promise.resolve(proxy.faults.count({ method: 'WATCH', pathPattern: vmis }) > watches),
      );
      assert.equal(
        proxy.faults.count({ method: 'GET', pathPattern: vmis }),
        lists,
        'resumed without listing again',
      );
      const released = performance.now();
      sandbox.standIns.configure({ noIp: () => false });
      assert.equal(await creating, undefined);
      const noticed = performance.now() - released;
      // The guest agent's delay (1 s) plus moments; a watch that did not resume would leave the
      // wait blind until its idle timeout (60 s).
      assert.ok(noticed < 5_000, `the IP was seen ${noticed.toFixed(0)} ms after it was allowed`);
      assert.match(m.driver.config.IPAddress, /^\d+\.\d+\.\d+\.\d+$/);
      await m.driver.remove();
      m.driver.close();
    } finally {
      sandbox.standIns.configure({ noIp: () => false });
    }
  });
});

describe('409 conflicts on the VM during a removal', () => {
  /** A machine of `cluster`, annotated for a whole-cluster deletion as Rancher does it. */
  async function wholeClusterMachine(
    name: string,
    cluster: string,
    onRequest?: (method: string, path: string) => void,
  ) {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const hook = pauseHook();
    const m = watchedMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: cluster,
      clientOptions: { ...hook.options, ...(onRequest ? { onRequest } : {}) },
    });
    await m.driver.create();
    const boot = await vmPvcNames(admin, ns, name);
    for (const pvc of boot) await waitPvcExists(admin, ns, pvc);
    await admin.patch(
      Resources.virtualMachine,
      { namespace: ns, name },
      { metadata: { annotations: { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' } } },
    );
    return { m, hook, boot };
  }

  it('a volume hot-plugged between the read and the write: the plan is made again and includes it', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const { proxy } = sandbox;
    const name = 'af-conflict-pool1-d4e5f-x1';
    // Another cluster's volume in the namespace, which must survive.
    const foreign = await recordedVolume(sandbox.standIns.csi, sandbox.harvester.admin, {
      namespace: ns,
      cluster: 'af-other',
      size: '1Gi',
    });
    const { m, hook, boot } = await wholeClusterMachine(name, 'af-c');
    // The released CSI driver does not label its volumes: only being attached makes it ours.
    const late = await sandbox.standIns.csi.createVolume({ namespace: ns, size: '1Gi' });
    // The removal's first write meets a transient 503; while it pauses, the CSI driver hot-plugs.
    proxy.faults.resetCounts();
    proxy.faults.inject({ method: 'PATCH', pathPattern: vmPath(name), status: 503, times: 1 });
    hook.arm(() => sandbox.standIns.csi.hotplug({ namespace: ns, vmName: name, pvcName: late }));
    await m.driver.remove();
    m.driver.close();
    assert.equal(hook.fired(), 1, 'the other writer ran between the read and the write');
    // 503, then 409 (stale resourceVersion), then accepted after a fresh read. Harvester's own VM
    // controller writes the VM too (its status, its annotations): a write of its between a read
    // and ours is one more 409 and one more plan, bounded by the removal.
    const writes = proxy.faults.count({ method: 'PATCH', pathPattern: vmPath(name) });
    assert.ok(writes >= 3, `the write: 503, then 409, then accepted after a fresh read (${writes} writes)`);
    assert.match(m.log.text(), new RegExp(`volumes to delete with the VM: .*${late}`));
    for (const pvc of [...boot, late]) await waitPvcGone(admin, ns, pvc);
    assert.ok((await livePvcUids(admin, ns)).has(foreign), "another cluster's volume stays");
  });

  it('a VM that keeps changing: gives up after a bounded number of plans, having deleted nothing', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const { proxy } = sandbox;
    const name = 'af-busy-pool1-e5f6a-x1';
    let busy = false;
    // Each plan starts with a fresh read of the namespace's VMs; its write then meets a
    // transient 503, and during that pause another writer touches the VM: every write is stale (409).
    const { m, hook, boot } = await wholeClusterMachine(name, 'af-b', (method, path) => {
      if (busy && method === 'GET' && vmListPath.test(path.split('?')[0] ?? '')) {
        proxy.faults.inject({ method: 'PATCH', pathPattern: vmPath(name), status: 503, times: 1 });
      }
    });
    let writes = 0;
    hook.arm(async () => {
      await admin.patch(
        Resources.virtualMachine,
        { namespace: ns, name },
        { metadata: { annotations: { 'test.harvester-machine/writer': String(++writes) } } },
      );
    }, 1_000);
    proxy.faults.resetCounts();
    busy = true;
    const err = await failureOf(m.driver.remove());
    busy = false;
    proxy.faults.clear();
    hook.arm(() => Promise.resolve(), 0);
    assert.ok(isConflict(err), String(err));
    assert.match(err.message, new RegExp(`^patch virtualmachines\\.kubevirt\\.io default/${name}: `));
    assert.equal(writes, 5, 'five plans, each overtaken by the other writer');
    assert.equal(
      proxy.faults.count({ method: 'PATCH', pathPattern: vmPath(name) }),
      10,
      'each: 503, then 409',
    );
    const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name });
    assert.equal(vm.metadata.deletionTimestamp, undefined, 'the VM was not deleted');
    assert.equal(vm.metadata.annotations?.[ANNOTATION_REMOVED_PVCS], undefined, 'no plan was recorded');
    const live = await livePvcUids(admin, ns);
    for (const pvc of boot) assert.ok(live.has(pvc), `${pvc} untouched`);

    // Once the VM holds still, the same removal finishes.
    await m.driver.remove();
    m.driver.close();
    for (const pvc of boot) await waitPvcGone(admin, ns, pvc);
  });
});
