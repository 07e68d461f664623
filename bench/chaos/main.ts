// `npm run chaos`: the walkthrough's deletion and credential stories, repeated on fresh guest
// clusters of one sandbox while faults fire at seeded random points (faults.ts), then the
// figures as a table. Exit status: 0 when every must-be-0 figure is 0; 1 when one is not;
// 2 when the time bound stopped it before --runs runs; 3 on a setup failure.
//
//   npm run chaos -- [--runs 20] [--max-minutes 25] [--seed N] [--gate-deadline 90s]
import { parseArgs } from 'node:util';
import { setUserAgentProgram } from '../../src/kube/index.js';
import { parseDuration } from '../../src/common/durations.js';
import { ANNOTATION_VOLUME_CLAIM_TEMPLATES } from '../../src/harvester/labels.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { CLOUD_CREDENTIAL_NAMESPACE } from '../../src/rancher/cloud-credential.js';
import { createGuestCluster } from '../../sandbox/rancher/guest-cluster.js';
import { RequestMeter } from './chaos-proxy.js';
import { FAULT_KINDS, seededRandom } from './faults.js';
import { runStory, type Bystander, type RunResult } from './run-story.js';
import { summaryTable } from './summary.js';
import { NS, VM_NS, ChaosWorld } from './world.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    'max-minutes': { type: 'string', default: '25' },
    seed: { type: 'string' },
    'gate-deadline': { type: 'string', default: '90s' },
  },
});
const runs = Number(values.runs);
const maxMinutes = Number(values['max-minutes']);
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 32);
for (const [flag, v, ok] of [
  ['--runs', runs, Number.isInteger(runs) && runs >= 1],
  ['--max-minutes', maxMinutes, Number.isFinite(maxMinutes) && maxMinutes > 0],
  ['--seed', seed, Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32],
] as const) {
  if (!ok) {
    process.stderr.write(`chaos: ${flag} ${String(v)} is not valid\n`);
    process.exit(3);
  }
}
const gateDeadline = values['gate-deadline'];
const gateDeadlineMs = parseDuration(gateDeadline);
// A gate may legitimately outlive its deadline by the longest outage a fault makes (a 20 s
// stall, a 15 s Lease takeover, an apiserver restart): more than that is a gate held too long.
const GRACE_MS = 45_000;

// In this process only the driver (the create and rm jobs) reaches the chaos proxies; the
// sandbox's own clients talk to the apiservers directly.
setUserAgentProgram('docker-machine-driver-harvester');

const started = Date.now();
const say = (line: string): void => {
  process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
};

async function bystanderCluster(world: ChaosWorld): Promise<Bystander> {
  const token = await world.sandbox.newRancherToken({ ttlMs: 86_400_000 });
  await world.saveCredential('cc-chaos-bystander', token);
  const machines = await createGuestCluster(world.rancher, {
    namespace: NS,
    name: 'bystander',
    clusterCredential: `${CLOUD_CREDENTIAL_NAMESPACE}:cc-chaos-bystander`,
    pools: [{ name: 'wk', quantity: 1 }],
    vmNamespace: VM_NS,
    downstreamKubeconfig: world.sandbox.rancher.adminKubeconfig,
  });
  const names: string[] = [];
  for (const m of machines) {
    const vm = await world.harvester.get<KubeObject>(Resources.virtualMachine, {
      namespace: VM_NS,
      name: m.instanceName,
    });
    const templates = JSON.parse(
      vm.metadata.annotations?.[ANNOTATION_VOLUME_CLAIM_TEMPLATES] ?? '[]',
    ) as Array<{
      metadata: { name: string };
    }>;
    names.push(...templates.map((t) => t.metadata.name));
    const hot = await world.sandbox.standIns.csi.createVolume({ namespace: VM_NS, size: '1Gi' });
    await world.sandbox.standIns.csi.hotplug({ namespace: VM_NS, vmName: m.instanceName, pvcName: hot });
    names.push(hot);
  }
  await world.sandbox.standIns.idle();
  const list = await world.harvester.list<KubeObject>(Resources.pvc, { namespace: VM_NS });
  const pvcs = new Map<string, string>();
  for (const p of list.items)
    if (names.includes(p.metadata.name)) pvcs.set(p.metadata.name, p.metadata.uid ?? '');
  if (pvcs.size !== names.length)
    throw new Error(`the bystander has ${pvcs.size} of its ${names.length} volumes`);
  return { pvcs };
}

async function main(): Promise<number> {
  say(
    `chaos: seed ${seed} (rerun with --seed ${seed}), ${runs} runs, at most ${maxMinutes} min, gate deadline ${gateDeadline}`,
  );
  const meter = new RequestMeter();
  const world = new ChaosWorld(meter, gateDeadline);
  const stopWorld = (): void => {
    void world.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', stopWorld);
  process.once('SIGTERM', stopWorld);
  const results: RunResult[] = [];
  let timedOut = false;
  let bystander: Bystander;
  try {
    try {
      await world.start();
      say(
        `sandbox up (${world.sandbox.clusterId}), 2 controller replicas, chaos proxies ${world.rancherSide.url} (Rancher) and ${world.harvesterSide.url} (Harvester)`,
      );
      bystander = await bystanderCluster(world);
      say(`bystander cluster up: ${bystander.pvcs.size} volumes that must survive every run`);
    } catch (err) {
      say(`setup failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      return 3;
    }
    const rng = seededRandom(seed);
    const deadline = started + maxMinutes * 60_000;
    for (let run = 1; run <= runs; run++) {
      const average = results.length ? results.reduce((a, r) => a + r.wallMs, 0) / results.length : 0;
      if (Date.now() + average > deadline) {
        timedOut = true;
        say(
          `time bound: ${maxMinutes} min would be passed by run ${run}; stopping after ${results.length} runs`,
        );
        break;
      }
      const r = await runStory(world, { run, rng, bystander, gateDeadlineMs, graceMs: GRACE_MS }, say);
      results.push(r);
      for (const f of r.fired)
        say(
          `  fault ${f.kind} in ${f.phase} at +${(f.atMs / 1000).toFixed(1)} s: ${f.error ? `FAILED TO INJECT: ${f.error}` : f.effect}`,
        );
      const bad = [
        ...r.volumesLost.map((v) => `lost ${v}`),
        ...r.volumesLeaked.map((v) => `leaked ${v}`),
        ...r.gatesPastDeadline.map((m) => `gate past deadline ${m}`),
        ...r.duplicateVms.map((v) => `duplicate VM ${v}`),
        ...r.vmsLeft.map((v) => `VM left ${v}`),
        ...r.stuck,
      ];
      for (const c of r.createsFailed) say(`  create job failed (not rerun, as Rancher): ${c}`);
      say(
        `run ${run}: ${r.createsFailed.length ? 'create failed, cluster deleted; ' : ''}${(r.wallMs / 1000).toFixed(1)} s (create ${((r.phaseMs.create ?? 0) / 1000).toFixed(1)} s, scale-down ${((r.phaseMs['scale-down'] ?? 0) / 1000).toFixed(1)} s, delete ${((r.phaseMs.delete ?? 0) / 1000).toFixed(1)} s), longest gate ${(r.longestGateMs / 1000).toFixed(0)} s, ${bad.length ? `PROBLEMS: ${bad.join('; ')}` : 'nothing lost, leaked or stuck'}`,
      );
    }
  } finally {
    say('stopping the sandbox');
    await world.stop();
  }
  const table = summaryTable({
    results,
    rates: meter.rates(),
    unplannedExits: world.unplannedExits.length,
    wallMs: Date.now() - started,
    seed,
    kinds: FAULT_KINDS,
  });
  process.stdout.write(`\n${table.text}\n`);
  if (table.failed) return 1;
  return timedOut ? 2 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`chaos: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(3);
  },
);
