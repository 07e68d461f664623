// A guest cluster's apiserver is its admins' (tenants'): the controller, as its own process at
// the chart's heap (deploy/helm values: a 256 Mi limit, the image's old generation at half of it,
// 2 MiB semi-spaces), faces four hostile guests at once (test/support/hostile-apiserver.ts:
// 200,000 PVs, a 58 MB list answer, list pages that never end, a watch that never ends) while
// another cluster is deleted: that deletion completes (its gates released, its VMs annotated),
// each hostile guest is marked over budget with one Event, and the process lives with its memory
// flat. Before the budget no guest was marked and the heap kept growing with what the
// guests sent (192 MB and rising within a minute here).
// Cost: the Rancher (Cluster API) and Harvester control planes, five guest clusters, one
// controller process; about a minute and a half on two shared cores.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import YAML from 'yaml';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import {
  startControllerProcess,
  type ControllerProcess,
} from '../../sandbox/walkthrough/controller-process.js';
import {
  HOSTILE_MODES,
  hostileKubeconfig,
  startHostileApiserver,
  type HostileApiserver,
} from '../support/hostile-apiserver.js';
import { eventually, eventuallyValue } from '../support/eventually.js';
import { NS, SYSTEM_NS, chartKubeconfig, useGateWorld } from './gate-fixture.js';

const fixture = useGateWorld({ controller: false });
const DAY = 86_400_000;

/** The chart's heap: half its memory limit (the image's --max-old-space-size-percentage=50). */
function chartHeapMb(): number {
  const values = YAML.parse(
    fs.readFileSync(
      new URL('../../../deploy/helm/harvester-machine-controller/values.yaml', import.meta.url),
      'utf8',
    ),
  ) as { resources?: { limits?: { memory?: string } } };
  const limit = /^(\d+)Mi$/.exec(values.resources?.limits?.memory ?? '')?.[1];
  assert.ok(limit, 'the chart has a memory limit in Mi');
  return Math.floor(Number(limit) / 2);
}

function procStatusMb(pid: number | undefined, field: string): number {
  const text = fs.readFileSync(`/proc/${pid ?? 0}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)?.[1] ?? 0) / 1024;
}

describe("the controller at the chart's heap against hostile guest apiservers", () => {
  let dir = '';
  let hostile: HostileApiserver | undefined;
  let controller: ControllerProcess | undefined;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-budget-'));
    hostile = await startHostileApiserver();
  });
  after(async () => {
    await controller?.stop().catch(() => undefined);
    await hostile?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("survives 200,000 PVs, a 58 MB answer, endless pages and an endless watch while another cluster's deletion completes", async () => {
    const { world } = fixture;
    const server = hostile as HostileApiserver;
    const { kubeconfig } = await world.harvesterUser('h-budget', new Date(Date.now() + DAY));
    await world.saveCredential('cc-budget', kubeconfig);
    const credential = 'cattle-global-data:cc-budget';

    // The hostile guests: each a cluster on Harvester whose `<cluster>-kubeconfig` Rancher wrote
    // (and named in the cluster's status), pointing at its tenant's apiserver.
    for (const mode of HOSTILE_MODES) {
      const name = `hostile-${mode}`;
      // Its nodes registered (the stand-in's machines reach Running), then its admins' apiserver
      // is what the kubeconfig names.
      await world.guest({ name, clusterCredential: credential, pools: [{ name: 'wk', quantity: 1 }] });
      await world.rancher.admin.patch(
        Resources.secret,
        { namespace: NS, name: `${name}-kubeconfig` },
        { data: { value: Buffer.from(hostileKubeconfig(server.url(mode))).toString('base64') } },
      );
      await world.rancher.admin.patch(
        Resources.provisioningCluster,
        { namespace: NS, name, subresource: 'status' },
        { status: { clientSecretName: `${name}-kubeconfig` } },
      );
    }
    const doomed = await world.guest({
      name: 'c-other',
      clusterCredential: credential,
      pools: [{ name: 'wk', quantity: 2 }],
    });

    const heapMb = chartHeapMb();
    controller = startControllerProcess({
      dir,
      rancherKubeconfig: await chartKubeconfig(world.rancher, { namespace: NS, systemNamespace: SYSTEM_NS }),
      namespace: NS,
      systemNamespace: SYSTEM_NS,
      nodeOptions: [`--max-old-space-size=${heapMb}`, '--max-semi-space-size=2'],
      extraArgs: ['--probe-interval', '1m'],
    });
    const c = controller;
    let exit: number | string | undefined;
    void c.exited.then((e) => (exit = e));
    await c.waitForLine((l) => l.msg === 'caches synced', 'caches synced', 60_000);
    // Every hostile guest has been asked (and the watch has streamed well past the bound).
    const guestLog = (): string =>
      c
        .lines()
        .filter((l) => /guest/i.test(JSON.stringify(l)))
        .slice(-8)
        .map((l) => JSON.stringify(l))
        .join('\n');
    await eventuallyValue(
      () =>
        `each hostile guest asked: ${JSON.stringify([...server.counts])}; the controller's log: ${guestLog()}`,
      () =>
        Promise.resolve(
          HOSTILE_MODES.every((m) => (server.counts.get(`${m} list`) ?? 0) > 0) &&
            (server.counts.get('watch events') ?? 0) > 5_000,
        ),
      (ok) => ok,
      60_000,
    );

    const report = (stage: string): void => {
      const alive = exit === undefined;
      console.log(
        `budget (${stage}): the controller at a ${heapMb} MB heap facing ${HOSTILE_MODES.join(', ')}: ${
          alive
            ? `RSS ${procStatusMb(c.pid, 'VmRSS').toFixed(0)} MB (peak ${procStatusMb(c.pid, 'VmHWM').toFixed(0)} MB)`
            : `exited (${exit}): ${c
                .lines()
                .slice(-2)
                .map((l) => l.msg)
                .join('; ')}`
        }; guest requests ${JSON.stringify(Object.fromEntries(server.counts))}`,
      );
    };
    report('every guest asked');
    // Another cluster's deletion completes: its gates released after its VMs were annotated.
    await world.rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name: 'c-other' });
    await world.waitGone(Resources.provisioningCluster, 'c-other', 90_000).finally(() => report('deletion'));
    for (const m of doomed)
      assert.deepEqual(
        world.observations.filter((o) => o.machine === m.name).map((o) => [o.vmFound, o.annotation]),
        [[true, 'true']],
        `${m.name}: annotated before its removal`,
      );

    // Each hostile guest over budget, one Event each (not one per retry), and the process alive.
    const overBudget = await eventually(
      'a GuestClusterOverBudget Event for each hostile guest',
      async () => {
        const events = (await world.events('GuestClusterOverBudget')).filter(
          (e) => e.involvedObject?.kind === 'Cluster',
        );
        return HOSTILE_MODES.every((m) => events.some((e) => e.involvedObject?.name === `hostile-${m}`));
      },
      60_000,
    ).then(() => world.events('GuestClusterOverBudget'));
    for (const mode of HOSTILE_MODES) {
      const mine = overBudget.filter((e) => e.involvedObject?.name === `hostile-${mode}`);
      const written = mine.reduce((n, e) => n + ((e as KubeObject & { count?: number }).count ?? 1), 0);
      // Once per change of state, not per retry: a guest whose lists fail stays over budget; the
      // endless watch's guest lists within budget again between its watches (backing off).
      const changes = mode === 'watch' ? (server.counts.get('watch watch') ?? 0) : 1;
      assert.ok(
        written >= 1 && written <= changes,
        `${mode}: ${written} Event(s) for ${changes} change(s) of state: ${JSON.stringify(mine.map((e) => e.message))}`,
      );
    }
    assert.equal(exit, undefined, 'the controller is still running');
    // The hostile guests go on (the watch streams whenever it is opened, the lists are retried):
    // the controller's memory does not grow with them.
    const events = server.counts.get('watch events') ?? 0;
    const before = procStatusMb(c.pid, 'VmRSS');
    await new Promise((r) => setTimeout(r, 20_000));
    report('end');
    assert.equal(exit, undefined, 'the controller is still running');
    const grown = procStatusMb(c.pid, 'VmRSS') - before;
    assert.ok(
      grown < 16,
      `RSS grew ${grown.toFixed(0)} MB in 20 s while ${(server.counts.get('watch events') ?? 0) - events} more events were streamed`,
    );
    const peakMb = procStatusMb(c.pid, 'VmHWM');
    // Within the chart's memory limit (twice the heap), with room.
    assert.ok(peakMb < heapMb * 2, `peak RSS ${peakMb.toFixed(0)} MB`);
  });
});
