// The gate's promise on a real apiserver: a cluster deletion is never blocked past the
// deadline, whatever the credential holds. A credential whose kubeconfig is not YAML or has
// no current context is a failed cleanup with its own reason (Event, condition, status
// entry, naming the Secret and what is wrong, never its content) and is released at the
// deadline; so is a machine whose Harvester accepts connections and never answers, at the
// deadline and not when the requests' own timeouts run out.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import {
  CLOUD_CREDENTIAL_NAMESPACE,
  CREDENTIAL_KEY_CLUSTER_ID,
  CREDENTIAL_KEY_KUBECONFIG,
} from '../../src/rancher/cloud-credential.js';
import { startRancherWithClusterApi, type RancherWithClusterApi } from '../../sandbox/capi/index.js';
import type { ControlPlane } from '../../sandbox/control-plane/control-plane.js';
import { startRancherStandIn, type RancherStandIn } from '../../sandbox/rancher/rancher-standin.js';
import { createGuestCluster, type GuestMachine } from '../../sandbox/rancher/guest-cluster.js';
import { eventuallyValue } from '../support/eventually.js';
import { startControllerAsChart } from './gate-fixture.js';

const NS = 'fleet-deadline';
const SYSTEM_NS = 'hm-deadline';
const DEADLINE_MS = 20_000;
const HOOK = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/harvester-machine-cleanup';

// Secret parts of the credentials below: none may reach an Event, a log line or the summary.
const TOKENS = {
  noContext: 'nocontext-token-7f3a9c1e5b2d4860',
  notYaml: 'notyaml-token-2c8e6a4f0b1d3957',
  stalled: 'stalled-token-9d1b7e3c5a2f4068',
};

const kubeconfig = (server: string, token: string, currentContext = true): string =>
  [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: h, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]`,
    `users: [{name: u, user: {token: "${token}"}}]`,
    'contexts: [{name: h, context: {cluster: h, user: u}}]',
    ...(currentContext ? ['current-context: h'] : []),
    '',
  ].join('\n');

/** A Harvester credential Secret as Rancher stores it, written without the test registering its secrets for redaction. */
const credential = (name: string, content: string): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: CLOUD_CREDENTIAL_NAMESPACE },
    type: 'provisioning.cattle.io/cloud-credential',
    data: {
      [CREDENTIAL_KEY_KUBECONFIG]: Buffer.from(content).toString('base64'),
      [CREDENTIAL_KEY_CLUSTER_ID]: Buffer.from('c-m-deadline').toString('base64'),
    },
  }) as KubeObject;

/** Accepts connections and never answers: a Harvester behind a stalled load balancer. */
async function silentServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

let world: RancherWithClusterApi | undefined;
let rancher: ControlPlane | undefined;
let standIn: RancherStandIn | undefined;
let silent: Awaited<ReturnType<typeof silentServer>> | undefined;
let stopController: (() => Promise<void>) | undefined;
let logLines: string[] = [];
let metricsPort = 0;

before(async () => {
  // The real Cluster API deletes the Machines and waits at the hooks (sandbox/capi).
  world = await startRancherWithClusterApi({ clusterApi: { namespace: NS } });
  rancher = world.rancher;
  for (const name of [NS, SYSTEM_NS, CLOUD_CREDENTIAL_NAMESPACE])
    await rancher.admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name },
    });
  silent = await silentServer();
  // Rancher's rm Job: nothing to remove (no Harvester here); the stand-in records when it ran.
  standIn = await startRancherStandIn(rancher.admin, {
    namespace: NS,
    removalJob: () => Promise.resolve(),
    retryDelayMs: 300,
  });
  const started = await startControllerAsChart(rancher, {
    namespace: NS,
    systemNamespace: SYSTEM_NS,
    gateDeadline: `${DEADLINE_MS / 1000}s`,
  });
  stopController = started.stop;
  metricsPort = started.controller.port;
  logLines = started.logLines;
});
after(async () => {
  await stopController?.();
  await standIn?.stop();
  await silent?.close();
  await world?.stop();
});

const cp = (): ControlPlane => {
  if (!rancher) throw new Error('the control plane is not started');
  return rancher;
};

type Machine = KubeObject & {
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
};
type Event = KubeObject & { message?: string; involvedObject?: { name?: string } };

async function eventsOn(machine: GuestMachine, reason: string): Promise<Event[]> {
  const list = await cp().admin.list<Event>(Resources.event, {
    namespace: NS,
    fieldSelector: `reason=${reason}`,
  });
  return list.items.filter((e) => e.involvedObject?.name === machine.name);
}

type Guests = Record<'noContext' | 'notYaml' | 'stalled', GuestMachine>;
const CLUSTERS = ['c-nocontext', 'c-notyaml', 'c-stalled'];

/** Three one-machine clusters, one per credential, gated, then deleted; when each Machine's deletion started. */
async function deleteThreeClusters(): Promise<{ guests: Guests; deletedAt: Map<string, number> }> {
  const { admin } = cp();
  const url = silent?.url ?? '';
  await admin.create(Resources.secret, credential('cc-nocontext', kubeconfig(url, TOKENS.noContext, false)));
  const notYaml = `apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: ${TOKENS.notYaml}\n   clusters: [\n`;
  await admin.create(Resources.secret, credential('cc-notyaml', notYaml));
  await admin.create(Resources.secret, credential('cc-stalled', kubeconfig(url, TOKENS.stalled)));
  const guests = {} as Guests;
  for (const [key, cc] of [
    ['noContext', 'cc-nocontext'],
    ['notYaml', 'cc-notyaml'],
    ['stalled', 'cc-stalled'],
  ] as const) {
    const [m] = await createGuestCluster(admin, {
      namespace: NS,
      name: `c-${cc.slice(3)}`,
      vmNamespace: 'vms',
      clusterCredential: `${CLOUD_CREDENTIAL_NAMESPACE}:${cc}`,
      pools: [{ name: 'wk', quantity: 1 }],
      downstreamKubeconfig: cp().adminKubeconfig,
    });
    assert.ok(m);
    guests[key] = m;
  }
  for (const m of Object.values(guests))
    await waitFor<KubeObject>(admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: m.name,
      timeoutMs: 30_000,
      description: `the cleanup hook on Machine ${m.name}`,
      until: (o) => o?.metadata.annotations?.[HOOK] !== undefined,
    });
  for (const name of CLUSTERS) await admin.delete(Resources.provisioningCluster, { namespace: NS, name });
  const deletedAt = new Map<string, number>();
  for (const m of Object.values(guests)) {
    const machine = await waitFor<KubeObject>(admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: m.name,
      timeoutMs: 30_000,
      description: `Machine ${m.name} being deleted`,
      until: (o) => Boolean(o?.metadata.deletionTimestamp),
    });
    deletedAt.set(m.name, Date.parse(machine?.metadata.deletionTimestamp ?? ''));
  }
  return { guests, deletedAt };
}

/** Before the deadline: held with the credential's own reason (Event, condition, summary); the summary's text. */
async function assertHeld(guests: Guests): Promise<string> {
  const { admin } = cp();
  const invalid = await eventuallyValue(
    'HarvesterCredentialInvalid Events on both machines with an unusable credential',
    async () => [
      await eventsOn(guests.noContext, 'HarvesterCredentialInvalid'),
      await eventsOn(guests.notYaml, 'HarvesterCredentialInvalid'),
    ],
    (l) => l.every((events) => events.length > 0),
    DEADLINE_MS / 2,
  );
  assert.match(
    invalid[0]?.[0]?.message ?? '',
    /cattle-global-data:cc-nocontext .*has no current-context.*Cloud Credentials/,
  );
  assert.match(
    invalid[1]?.[0]?.message ?? '',
    /cattle-global-data:cc-notyaml .*is not valid YAML \(line \d+/,
  );
  const held = await waitFor<Machine>(admin, {
    type: Resources.capiMachine,
    namespace: NS,
    name: guests.noContext.name,
    timeoutMs: DEADLINE_MS / 2,
    description: 'the HarvesterVolumeCleanup condition',
    until: (o) =>
      o?.status?.conditions?.some(
        (c) =>
          c.type === 'HarvesterVolumeCleanup' &&
          c.status === 'False' &&
          c.reason === 'HarvesterCredentialInvalid',
      ) ?? false,
  });
  assert.ok(held?.metadata.annotations?.[HOOK], 'the gate holds before the deadline');
  const summary = await eventuallyValue(
    'the status summary listing both held gates',
    async () =>
      (
        await admin.find<KubeObject & { data?: Record<string, string> }>(Resources.configMap, {
          namespace: SYSTEM_NS,
          name: 'harvester-machine-controller-status',
        })
      )?.data?.['summary.json'] ?? '{}',
    (text) => {
      const gates =
        (JSON.parse(text) as { gatesHeld?: Array<{ machine: string; reason: string }> }).gatesHeld ?? [];
      return [guests.noContext, guests.notYaml].every((m) =>
        gates.some((g) => g.machine === `${NS}/${m.name}` && g.reason === 'HarvesterCredentialInvalid'),
      );
    },
    DEADLINE_MS / 2,
  );
  const ran = standIn?.runs.filter((r) => Object.values(guests).some((m) => r.machine === `${NS}/${m.name}`));
  assert.equal(ran?.length, 0, 'no removal ran while the gates were held');
  return summary;
}

/** Every cluster goes; how many ms after its deadline each machine's removal started. */
async function releaseLateness(
  guests: Guests,
  deletedAt: Map<string, number>,
): Promise<Record<string, number>> {
  const { admin } = cp();
  for (const name of CLUSTERS)
    await waitFor(admin, {
      type: Resources.provisioningCluster,
      namespace: NS,
      name,
      timeoutMs: DEADLINE_MS * 3,
      description: `cluster ${name} to be deleted`,
      until: (o) => o === undefined,
    });
  const lateness: Record<string, number> = {};
  for (const [key, m] of Object.entries(guests)) {
    const run = standIn?.runs.find((r) => r.machine === `${NS}/${m.name}`);
    assert.ok(run, `the removal of ${m.name} ran`);
    // deletionTimestamp has whole seconds: the deadline counts from up to 1 s before the deletion.
    lateness[key] = run.startedAt - ((deletedAt.get(m.name) ?? 0) + DEADLINE_MS);
    const released = await eventsOn(m, 'CleanupGateDeadlineExceeded');
    assert.equal(released.length, 1, `${key}: one CleanupGateDeadlineExceeded Event`);
  }
  return lateness;
}

const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

/** The value of one series in the text exposition (0 when absent). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** What an operator's dashboards read: present, and moved by what the test did. */
function assertMetricsMoved(before: string, after: string): void {
  const moved = (series: string, by = 1): void =>
    assert.ok(
      sample(after, series) - sample(before, series) >= by,
      `${series}: ${sample(before, series)} → ${sample(after, series)}`,
    );
  moved('harvester_machine_cleanup_gate_releases_total{reason="deadline"}', 3);
  moved('harvester_machine_cleanup_failures_total{reason="HarvesterCredentialInvalid"}', 2);
  moved('controller_runtime_reconcile_total{controller="machines",result="success"}');
  moved('controller_runtime_reconcile_total{controller="machines",result="requeue_after"}', 2);
  moved('controller_runtime_reconcile_time_seconds_count{controller="machines"}', 3);
  moved('workqueue_adds_total{name="machines"}', 3);
  moved('workqueue_queue_duration_seconds_count{name="machines"}', 3);
  moved('workqueue_work_duration_seconds_count{name="credentials"}', 3);
  moved('process_cpu_user_seconds_total', 0.01);
  for (const series of [
    'leader_election_master_status{name="harvester-machine-controller"}',
    'harvester_machine_controller_leader',
  ])
    assert.equal(sample(after, series), 1, series);
  assert.equal(sample(after, 'harvester_machine_credentials{state="invalid"}'), 2);
  for (const name of [
    'workqueue_depth',
    'workqueue_retries_total',
    'controller_runtime_reconcile_errors_total',
    'nodejs_heap_size_used_bytes',
  ])
    assert.match(after, new RegExp(`^# TYPE ${name} `, 'm'));
}

describe('cleanup gate deadline', () => {
  it('holds an unusable credential with its own reason and releases every gate at the deadline', async (t) => {
    const { admin } = cp();
    const metricsBefore = await scrape();
    const { guests, deletedAt } = await deleteThreeClusters();
    const summary = await assertHeld(guests);
    const lateness = await releaseLateness(guests, deletedAt);
    t.diagnostic(`removal started this many ms after the deadline: ${JSON.stringify(lateness)}`);
    // The stalled Harvester's requests would only time out after 2 × 15 s; the gate does not wait for them.
    for (const [key, late] of Object.entries(lateness)) {
      assert.ok(late > -1_000, `${key}: released ${-late} ms before the deadline`);
      assert.ok(late < 8_000, `${key}: released ${late} ms after the deadline (${JSON.stringify(lateness)})`);
    }
    const released = await eventsOn(guests.noContext, 'CleanupGateDeadlineExceeded');
    assert.match(released[0]?.message ?? '', /HarvesterCredentialInvalid/);

    const metrics = await scrape();
    assertMetricsMoved(metricsBefore, metrics);

    const messages = async (namespace: string): Promise<string[]> =>
      (await admin.list<Event>(Resources.event, { namespace })).items.map((e) => e.message ?? '');
    const secretEvents = await messages(CLOUD_CREDENTIAL_NAMESPACE);
    assert.ok(
      secretEvents.some((m) => /cannot be used: kubeconfig has no current-context/.test(m)),
      `an Event on the credential itself: ${secretEvents.join(' | ')}`,
    );
    const seen = {
      Events: [...(await messages(NS)), ...secretEvents].join('\n'),
      logs: logLines.join('\n'),
      summary,
      metrics,
    };
    for (const token of Object.values(TOKENS))
      for (const [where, text] of Object.entries(seen))
        assert.ok(!text.includes(token), `a credential's token in the ${where}`);
  });
});
