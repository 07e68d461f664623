// Leader election when the apiserver stops answering the leader (a loopback proxy in front of
// the real apiserver, frozen): the leader stops acting and exits within its renew deadline,
// before the lease duration after its last renewal, and a standby that still reaches the
// apiserver takes over only after that: never two replicas acting at once. Both replicas
// run as main.ts runs them, each with its own metrics endpoint, sampled every 50 ms.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { createLogger } from '../../src/log/logger.js';
import { parseConfig } from '../../src/controller/process/config.js';
import { run, type Running } from '../../src/controller/process-main.js';
import { useControlPlane } from '../support/control-plane-fixture.js';
import { eventually, sleep } from '../support/eventually.js';
import { startFreezableProxy, type FreezableProxy } from '../support/tcp-proxy.js';

const fixture = useControlPlane({ name: 'lease-stall', crds: 'rancher', controllerManager: false });
const SYSTEM_NS = 'kube-system';
// client-go's defaults (15 s / 10 s / 2 s) scaled down by about four.
const TIMINGS = { leaseDurationMs: 4_000, renewDeadlineMs: 2_700, retryPeriodMs: 500 };

interface Replica {
  id: string;
  running: Running;
  exitedAt?: number;
  exitCode?: number;
  leading(): Promise<boolean>;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-lease-stall-'));
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  fs.rmSync(dir, { recursive: true, force: true });
});

async function replica(id: string, kubeconfig: string): Promise<Replica> {
  const file = path.join(dir, `${id}.kubeconfig`);
  fs.writeFileSync(file, kubeconfig, { mode: 0o600 });
  const parsed = parseConfig(
    [
      '--kubeconfig',
      file,
      '--namespace',
      'fleet-stall',
      '--leader-election-namespace',
      SYSTEM_NS,
      '--metrics-bind-address',
      '127.0.0.1:0',
    ],
    { POD_NAME: id },
  );
  const config = { ...parsed, leaderElection: { ...parsed.leaderElection, ...TIMINGS } };
  const logger = createLogger({ format: 'json', level: 'warn', sink: { write: () => undefined } });
  const r: Partial<Replica> & { id: string } = { id };
  r.running = await run(
    config,
    logger,
    {},
    {
      exit: (code) => {
        r.exitedAt ??= Date.now();
        r.exitCode = code;
      },
    },
  );
  const port = r.running.port;
  r.leading = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return /^harvester_machine_controller_leader 1$/m.test(text);
  };
  cleanups.push(() => (r.running as Running).shutdown());
  return r as Replica;
}

describe('leader election against an apiserver that stops answering', () => {
  it('the leader stops acting within its renew deadline, before a standby takes over', async (t) => {
    const { cp } = fixture;
    const upstream = new URL(cp.server);
    const proxy: FreezableProxy = await startFreezableProxy({
      host: upstream.hostname,
      port: Number(upstream.port),
    });
    cleanups.push(() => proxy.close());
    const viaProxy = cp.adminKubeconfig.replace(cp.server, `https://127.0.0.1:${proxy.port}`);
    assert.notEqual(viaProxy, cp.adminKubeconfig);

    const a = await replica('replica-a', viaProxy);
    await eventually('replica-a to lead', () => a.leading(), 20_000);
    const b = await replica('replica-b', cp.adminKubeconfig);
    // Several retry periods: the standby keeps standing by while the leader renews.
    await sleep(TIMINGS.retryPeriodMs * 4);
    assert.equal(await b.leading(), false, 'the standby does not lead while the leader renews');

    const frozenAt = Date.now();
    proxy.freeze();
    const samples: Array<{ at: number; a: boolean; b: boolean }> = [];
    for (;;) {
      const [la, lb] = await Promise.all([a.leading(), b.leading()]);
      samples.push({ at: Date.now(), a: la, b: lb });
      if (lb || Date.now() - frozenAt > 30_000) break;
      await sleep(50);
    }
    proxy.thaw();
    const aStopped = samples.find((s) => !s.a)?.at;
    const bLed = samples.find((s) => s.b)?.at;
    t.diagnostic(
      `after the freeze: replica-a exited at +${(a.exitedAt ?? NaN) - frozenAt} ms (metrics 0 by +${(aStopped ?? NaN) - frozenAt} ms), replica-b led at +${(bLed ?? NaN) - frozenAt} ms`,
    );
    assert.ok(a.exitedAt !== undefined && a.exitCode === 1, 'the old leader exits with status 1');
    assert.ok(
      a.exitedAt - frozenAt <= TIMINGS.renewDeadlineMs + 500,
      `the old leader stopped ${a.exitedAt - frozenAt} ms after the apiserver stopped answering`,
    );
    assert.ok(a.exitedAt - frozenAt < TIMINGS.leaseDurationMs, 'it stopped before its lease could expire');
    assert.ok(bLed !== undefined, 'the standby took over');
    assert.ok(bLed > a.exitedAt, 'the standby led only after the old leader exited');
    assert.deepEqual(
      samples.filter((s) => s.a && s.b),
      [],
      'never two replicas leading at once',
    );
    const lease = await cp.admin.get<KubeObject & { spec?: { holderIdentity?: string } }>(Resources.lease, {
      namespace: SYSTEM_NS,
      name: 'harvester-machine-controller',
    });
    assert.equal(lease.spec?.holderIdentity, 'replica-b');
  });
});
