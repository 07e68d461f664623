// Benchmark (not a test): the cleanup controller at Rancher's scale. One control plane (Rancher's
// CRDs, no controllers) is filled with 1,000, then 5,000, then 20,000 machines of guest clusters
// (bench/support/rancher-objects.ts: per machine a HarvesterMachine and a CAPI Machine already
// gated, per ten machines a provisioning and a CAPI Cluster, per ten clusters a Harvester cloud
// credential), written straight to the apiserver in parallel; at each size the controller is
// started as shipped (dist/src/controller/main.js, its own process) and measured:
//   - RSS once its queues are idle (and its peak), the V8 heap when synced;
//   - time from the process's start to "caches synced" (every list in the cache), and to idle
//     (every Machine, cluster and credential reconciled once);
//   - API requests per minute while idle (its own counter, harvester_machine_api_requests_total:
//     Rancher's API by verb, and Harvester's through the credentials, i.e. the probes).
// Baselines in the same run: the same process with nothing cached, and with BENCH_BASELINE=<an
// executable> that release at every size (before/after). The control plane is
// discarded at the end (nothing to clean up object by object).
// Run: npx tsc -p . && [BENCH_BASELINE=<executable>] node dist/bench/controller-scale.js [sizes=1000,5000,20000] [idleSeconds=60]
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { hookAnnotation } from '../src/controller/constants.js';
import { createTokenUser, tokenKubeconfig } from '../sandbox/control-plane/access.js';
import { startControlPlane, type ControlPlane } from '../sandbox/control-plane/control-plane.js';
import { freePort } from '../sandbox/control-plane/ports.js';
import { installCrds, loadCrds } from '../sandbox/crds/install.js';
import { harvesterMachineExecutable, unpackCacheEnv } from '../sandbox/rancher-machine/plugin-executable.js';
import { CONTROLLER_IMAGE_ENV } from '../sandbox/release/artifacts.js';
import { harvesterCloudCredential } from '../sandbox/rancher/credentials.js';
import {
  writeMachines,
  credentialName,
  MACHINES_PER_CLUSTER,
  CLUSTERS_PER_CREDENTIAL,
} from './support/rancher-objects.js';

const SIZES = (process.argv[2] ?? '1000,5000,20000').split(',').map(Number);
const IDLE_SECONDS = Number(process.argv[3] ?? 60);
const NS = 'fleet-default';
const HOOK = 'harvester-machine-cleanup';
/** The goals of issue 24 at the largest size. */
const GOAL_RSS_MB = 200;
const GOAL_SYNCED_S = 30;

interface Figures {
  machines: number;
  rssMb: number;
  peakMb: number;
  /** When the sampled peak was, in seconds after the caches synced (negative: before), and the RSS at sync. */
  peakAfterSyncS: number;
  rssAtSyncMb: number;
  heapMb: number | undefined;
  /** Once idle: V8's heap in use and allocated, and memory outside it (Buffers, TLS). */
  idleHeapUsedMb: number;
  idleHeapTotalMb: number;
  externalMb: number;
  syncedS: number;
  idleS: number;
  /** Per minute while idle, by "api verb". */
  idle: Record<string, number>;
}

async function metrics(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
  return res.text();
}

function series(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const [labels, value] = [
      line.slice(name.length + 1, line.lastIndexOf('}')),
      line.slice(line.lastIndexOf(' ') + 1),
    ];
    out.set(labels, Number(value));
  }
  return out;
}

const requestCounts = (text: string): Map<string, number> => {
  const out = new Map<string, number>();
  for (const [labels, n] of series(text, 'harvester_machine_api_requests_total')) {
    const api = /api="([^"]+)"/.exec(labels)?.[1] ?? '?';
    const verb = /verb="([^"]+)"/.exec(labels)?.[1] ?? '?';
    out.set(`${api} ${verb}`, n);
  }
  return out;
};

const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

function procStatus(pid: number, field: string): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
}

/** Until every queue is empty and no request was sent for quietMs. */
async function untilIdle(port: number, quietMs: number, child: ChildProcess): Promise<void> {
  let last = -1;
  let since = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the controller exited (${child.exitCode})`);
    // A controller too busy to answer within the timeout (its initial reconciles, on loaded
    // cores) is not idle yet: ask again.
    const text = await metrics(port).catch(() => undefined);
    if (text === undefined) since = performance.now();
    else {
      const depth = sum(series(text, 'workqueue_depth'));
      const sent = sum(requestCounts(text));
      if (depth > 0 || sent !== last) {
        last = sent;
        since = performance.now();
      } else if (performance.now() - since >= quietMs) return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface ControllerCommand {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  what: string;
}

/**
 * The release to compare against, at every size (`BENCH_BASELINE=<a harvester-machine
 * executable>`, e.g. main's): as it shipped, without the image's memory settings.
 */
function baselineCommand(): ControllerCommand | undefined {
  const exe = process.env.BENCH_BASELINE;
  if (!exe) return undefined;
  fs.accessSync(exe, fs.constants.X_OK);
  return { command: exe, args: ['controller'], env: { ...process.env, ...unpackCacheEnv() }, what: exe };
}

/** The chart's memory limit in MiB (its values.yaml), what Node reads from the pod's cgroup. */
function chartMemoryLimitMib(): number {
  const values = YAML.parse(
    fs.readFileSync(
      fileURLToPath(new URL('../../deploy/helm/harvester-machine-controller/values.yaml', import.meta.url)),
      'utf8',
    ),
  ) as { resources?: { limits?: { memory?: string } } };
  const limit = /^(\d+)Mi$/.exec(values.resources?.limits?.memory ?? '')?.[1];
  if (limit === undefined) throw new Error('the chart has no memory limit in Mi (resources.limits.memory)');
  return Number(limit);
}

/**
 * The image's settings as they act in the chart's pod: no cgroup limits this process, so the
 * image's old-generation share of the container's limit is given as the size it comes to there.
 */
function imageEnvInThePod(): Record<string, string> {
  const limit = chartMemoryLimitMib();
  return {
    ...CONTROLLER_IMAGE_ENV,
    NODE_OPTIONS: CONTROLLER_IMAGE_ENV.NODE_OPTIONS.replace(
      /--max-old-space-size-percentage=(\d+)/,
      (_, p: string) => `--max-old-space-size=${Math.floor((limit * Number(p)) / 100)}`,
    ),
  };
}

/** The controller as shipped (the single executable, Node LTS inside), or as compiled under this Node. */
async function controllerCommand(): Promise<ControllerCommand> {
  if (process.env.BENCH_CONTROLLER === 'node')
    return {
      command: process.execPath,
      args: [fileURLToPath(new URL('../src/controller/main.js', import.meta.url))],
      // The image's V8 and malloc settings as in the chart's limit, for the controller only.
      env: { ...process.env, ...imageEnvInThePod() },
      what: `node ${process.version} dist/src/controller/main.js with the image's settings as in the chart's ${chartMemoryLimitMib()} Mi limit`,
    };
  const exe = await harvesterMachineExecutable();
  return {
    command: exe,
    args: ['controller'],
    env: { ...process.env, ...unpackCacheEnv(), ...imageEnvInThePod() },
    what: `the single executable (harvester-machine controller) with the image's settings as in the chart's ${chartMemoryLimitMib()} Mi limit: ${Object.entries(
      imageEnvInThePod(),
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  };
}

async function measure(
  kubeconfigPath: string,
  namespace: string,
  machines: number,
  { command, args, env }: ControllerCommand,
): Promise<Figures> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(
    command,
    [
      ...args,
      '--kubeconfig',
      kubeconfigPath,
      '--namespace',
      namespace,
      '--leader-elect',
      'false',
      '--metrics-bind-address',
      `127.0.0.1:${port}`,
      '--log-level',
      'info',
      '--leader-election-namespace',
      'default',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env },
  );
  let logged = '';
  // Where the peak is: RSS sampled every 100 ms, against the moment the caches synced.
  const samples: Array<{ at: number; mb: number }> = [];
  const sampler = setInterval(() => {
    try {
      samples.push({ at: performance.now(), mb: procStatus(child.pid ?? 0, 'VmRSS') });
    } catch {
      // not started yet, or gone
    }
  }, 100);
  try {
    const syncedAt = await new Promise<number>((resolve, reject) => {
      child.stdout?.on('data', (c: Buffer) => {
        logged += c.toString();
        if (logged.includes('"caches synced"')) resolve(performance.now());
      });
      child.once('exit', (code) => reject(new Error(`controller exited (${code}): ${logged.slice(-2000)}`)));
    });
    await untilIdle(port, 3000, child);
    const idleAt = performance.now() - 3000;
    const before = requestCounts(await metrics(port));
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const after = requestCounts(await metrics(port));
    const idle: Record<string, number> = {};
    for (const [k, n] of after) {
      const d = n - (before.get(k) ?? 0);
      if (d > 0) idle[k] = (d * 60) / IDLE_SECONDS;
    }
    const heap = /"caches synced".*?"heapUsedMb":(\d+)/.exec(logged)?.[1];
    const gauges = await metrics(port);
    const gauge = (name: string): number =>
      Number(
        /^(\S+) (\S+)$/m.exec(gauges.split('\n').find((l) => l.startsWith(`${name} `)) ?? '')?.[2] ?? NaN,
      ) / 1_048_576;
    const peak = samples.reduce((a, b) => (b.mb > a.mb ? b : a), { at: 0, mb: 0 });
    const atSync = samples.findLast((x) => x.at <= syncedAt)?.mb ?? NaN;
    return {
      machines,
      peakAfterSyncS: (peak.at - syncedAt) / 1000,
      rssAtSyncMb: atSync,
      rssMb: procStatus(child.pid ?? 0, 'VmRSS'),
      peakMb: procStatus(child.pid ?? 0, 'VmHWM'),
      heapMb: heap === undefined ? undefined : Number(heap),
      idleHeapUsedMb: gauge('nodejs_heap_size_used_bytes'),
      idleHeapTotalMb: gauge('nodejs_heap_size_total_bytes'),
      externalMb: gauge('nodejs_external_memory_bytes'),
      syncedS: (syncedAt - started) / 1000,
      idleS: (idleAt - started) / 1000,
      idle,
    };
  } finally {
    clearInterval(sampler);
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  }
}

function line(f: Figures): string {
  const idleTotal = Object.values(f.idle).reduce((a, b) => a + b, 0);
  const beyond = Object.entries(f.idle)
    .filter(([k]) => k !== 'rancher watch' && !k.startsWith('harvester '))
    .reduce((a, [, n]) => a + n, 0);
  const detail = Object.entries(f.idle)
    .map(([k, n]) => `${k} ${n.toFixed(1)}`)
    .join(', ');
  return `scale: controller ${f.machines} machines: RSS ${f.rssMb.toFixed(0)} MB (peak ${f.peakMb.toFixed(0)} MB ${f.peakAfterSyncS >= 0 ? `${f.peakAfterSyncS.toFixed(1)} s after` : `${(-f.peakAfterSyncS).toFixed(1)} s before`} synced, ${f.rssAtSyncMb.toFixed(0)} MB when synced; heap ${f.heapMb ?? '?'} MB used when synced, ${f.idleHeapUsedMb.toFixed(0)} of ${f.idleHeapTotalMb.toFixed(0)} MB idle, external ${f.externalMb.toFixed(0)} MB), synced in ${f.syncedS.toFixed(1)} s (idle after ${f.idleS.toFixed(1)} s), ${beyond.toFixed(1)} requests/min idle beyond watches and probes (all: ${idleTotal.toFixed(1)}/min${detail ? `: ${detail}` : ''})`;
}

async function main(): Promise<void> {
  const rancher: ControlPlane = await startControlPlane({ name: 'rancher-scale', controllerManager: false });
  const kubeconfigPath = path.join(rancher.dir, 'controller.kubeconfig');
  fs.writeFileSync(kubeconfigPath, rancher.adminKubeconfig, { mode: 0o600 });
  const results: Figures[] = [];
  try {
    // Without the status subresource, an object is written with its status in one request: the
    // controller reads objects as Cluster API and Rancher leave them, status included.
    for (const crd of await loadCrds('rancher')) {
      for (const v of (crd as unknown as { spec: { versions: Array<{ subresources?: unknown }> } }).spec
        .versions)
        delete v.subresources;
      await rancher.admin.create(Resources.crd, crd);
    }
    await installCrds(rancher.admin, 'rancher');
    for (const name of [NS, 'cattle-global-data', 'bench-empty'])
      await rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      });
    // Each credential reaches this apiserver as a token user: its probes cost what Harvester's would.
    const user = await createTokenUser(rancher.admin, {
      expiresAt: new Date(Date.now() + 86_400_000),
      rules: [],
    });
    const kubeconfig = tokenKubeconfig({
      name: 'h',
      server: rancher.server,
      caPem: rancher.caPem,
      token: user.token,
    });
    const credential = (k: number): KubeObject =>
      harvesterCloudCredential({ name: credentialName(k), kubeconfig, clusterId: `c-m-${k}` });

    const ours = await controllerCommand();
    const before = baselineCommand();
    console.log(`controller: ${ours.what}`);
    if (before) console.log(`before: ${before.what}, as released (no image settings)`);
    const empty = await measure(kubeconfigPath, 'bench-empty', 0, ours);
    console.log(`baseline: ${line(empty).replace(/^scale: /, '')}`);
    let written = 0;
    for (const size of SIZES) {
      const t = performance.now();
      const objects = await writeMachines(rancher.admin, {
        namespace: NS,
        from: written,
        to: size,
        hook: hookAnnotation(HOOK),
        credential,
      });
      console.log(
        `setup: ${size - written} more machines (${objects} objects: HarvesterMachines, Machines, ${MACHINES_PER_CLUSTER} machines per cluster, ${CLUSTERS_PER_CREDENTIAL} clusters per credential) written in ${((performance.now() - t) / 1000).toFixed(1)} s (${(objects / ((performance.now() - t) / 1000)).toFixed(0)}/s)`,
      );
      written = size;
      const f = await measure(kubeconfigPath, NS, size, ours);
      results.push(f);
      console.log(line(f));
      // A release without harvester_machine_api_requests_total shows no idle requests: not measured.
      if (before)
        console.log(
          `before: ${line(await measure(kubeconfigPath, NS, size, before)).replace(/^scale: /, '')}`,
        );
    }
  } finally {
    await rancher.stop();
  }
  const largest = results.at(-1);
  if (largest && largest.machines >= 20_000)
    console.log(
      `goals at ${largest.machines}: RSS ${largest.rssMb.toFixed(0)} MB (goal ≤ ${GOAL_RSS_MB}), synced in ${largest.syncedS.toFixed(1)} s (goal ≤ ${GOAL_SYNCED_S})`,
    );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
