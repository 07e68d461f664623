// Benchmark (not a test) of the drop-in plugin. Prints its figures and writes a JSON report
// to bench/results/plugin-bench-<time>.json.
//  1. The single executable (what `npm run build` ships): size; start-to-first-line time
//     and memory (RSS at the first line, and after a session like rancher-machine's first
//     plugin: GetVersion, GetCreateFlags, Close; peak RSS), median of --runs launches, warm
//     (runtime already unpacked) and cold (a fresh cache each time, as in every Rancher job's
//     new pod). Baseline in the same run: the same plugin as `node dist/src/plugin/main.js`
//     on this machine's Node (20).
//  2. On the sandbox: a full `rancher-machine create` and `rm -y --update-config` as
//     Rancher's jobs run them (Rancher-path kubeconfig), median of --cycles. The stand-ins'
//     fixed delays are printed, so that what is left is rancher-machine's and the driver's
//     own time. Baseline: the Go driver's waiting strategy (poll every 5 s), run beside
//     ours on the same VM from the instant the Go driver would start it (go-style-waiter.ts).
//     One untimed cycle first (the sandbox's first VM is seconds slower); beside each total,
//     the time from the condition (the IP, the VM gone, seen by a watch) to the command's end:
//     the driver's lag plus what rancher-machine does after; docs/decisions/0028-bench-method.md.
// Run: npx tsc -p . && node dist/bench/plugin-bench.js [--runs=15] [--cycles=3]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeClient } from '../src/kube/client.js';
import type { KubeObject } from '../src/kube/resources.js';
import { Resources } from '../src/kube/resources.js';
import type { VirtualMachineInstance } from '../src/harvester/types.js';
import { registerSecret } from '../src/log/redact.js';
import { driverRegistry, mcnFlagSliceType } from '../src/plugin/driver-types.js';
import { goEmptyStruct, goInt } from '../src/plugin/gob/go-types.js';
import { RpcTestClient } from '../src/plugin/testing/rpc-test-client.js';
import { DEFAULT_DELAYS } from '../sandbox/standins/context.js';
import { startSandbox, type Sandbox } from '../sandbox/sandbox.js';
import { installPlugin, pluginExecutable } from '../sandbox/rancher-machine/plugin-executable.js';
import { PLUGIN_ENV, memoryBytes, startPlugin } from '../test/interop/support/plugin-process.js';
import { showMs } from './support/spread.js';
import {
  INSTALL_SCRIPT,
  poolConfig,
  rancherCreateArgs,
  rancherRemoveArgs,
} from '../sandbox/rancher-machine/rancher-job.js';
import {
  MachineCli,
  rancherMachineBinary,
  rancherMachineSkipReason,
} from '../test/interop/support/rancher-machine.js';
import { repoRoot } from '../sandbox/repo.js';
import { GO_POLL_INTERVAL_MS, goStyleWaitReady, goStyleWaitRemoved } from './go-style-waiter.js';

const NS = 'default';
const MiB = 1024 * 1024;

function option(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  const value = arg ? Number(arg.slice(name.length + 3)) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer`);
  return value;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

const ms = (v: number): string => `${v.toFixed(0)} ms`;
const mib = (v: number): string => `${(v / MiB).toFixed(1)} MiB`;

// ---- 1. start-up and memory ----

interface StartupSample {
  firstLineMs: number;
  rssAtFirstLine: number;
  rssAfterSession: number;
  peakRss: number;
}

/**
 * How long one launch may take to print its address before the bench gives up on it. A slow
 * start on a loaded machine is a figure to report, not a failure: the tests' 10 s made the bench
 * crash at random when other work held both cores.
 */
const FIRST_LINE_TIMEOUT_MS = 120_000;

/** One launch as rancher-machine's create does its first plugin: GetVersion, GetCreateFlags, Close. */
async function startupSample(
  command: string,
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<StartupSample> {
  const env = { PATH: process.env.PATH ?? '', HOME: os.homedir(), ...PLUGIN_ENV, ...extraEnv };
  const plugin = await startPlugin(command, args, env, FIRST_LINE_TIMEOUT_MS);
  const pid = plugin.child.pid ?? 0;
  try {
    const rssAtFirstLine = memoryBytes(pid) ?? NaN;
    const client = await RpcTestClient.dial(plugin.address, driverRegistry());
    await client.call('RPCServerDriver.GetVersion', goInt);
    await client.call('RPCServerDriver.GetCreateFlags', mcnFlagSliceType);
    const rssAfterSession = memoryBytes(pid) ?? NaN;
    const peakRss = memoryBytes(pid, 'VmHWM') ?? NaN;
    await client.call('RPCServerDriver.Close', goEmptyStruct).catch(() => undefined);
    const [code] = await plugin.exited;
    if (code !== 0) throw new Error(`${command} exited ${code} after Close`);
    return { firstLineMs: plugin.firstLineMs, rssAtFirstLine, rssAfterSession, peakRss };
  } finally {
    plugin.child.kill('SIGKILL');
  }
}

function summarize(samples: StartupSample[]): StartupSample {
  return {
    firstLineMs: median(samples.map((s) => s.firstLineMs)),
    rssAtFirstLine: median(samples.map((s) => s.rssAtFirstLine)),
    rssAfterSession: median(samples.map((s) => s.rssAfterSession)),
    peakRss: median(samples.map((s) => s.peakRss)),
  };
}

function embeddedNodeVersion(root: string): string {
  const script = fs.readFileSync(path.join(root, 'scripts/build-executable.sh'), 'utf8');
  return /^NODE_LTS_VERSION="([^"]+)"/m.exec(script)?.[1] ?? 'unknown';
}

async function benchStartup(executable: string, runs: number) {
  const rancherArgv = ['rancher-machine', 'create', '-d', 'harvester', 'm1'];
  const mainJs = fileURLToPath(new URL('../src/plugin/main.js', import.meta.url));
  const warm: StartupSample[] = [];
  const cold: StartupSample[] = [];
  const node: StartupSample[] = [];
  const caches = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-bench-cold-'));
  try {
    // One warm-up each (page cache), then alternate so that load from others hits all alike.
    await startupSample(executable, rancherArgv);
    await startupSample(process.execPath, [mainJs, ...rancherArgv]);
    for (let i = 0; i < runs; i++) {
      warm.push(await startupSample(executable, rancherArgv));
      node.push(await startupSample(process.execPath, [mainJs, ...rancherArgv]));
      // A cold start every third run: each unpacks 110 MB.
      if (i % 3 === 0) {
        const fresh = path.join(caches, String(i));
        fs.mkdirSync(fresh);
        cold.push(await startupSample(executable, rancherArgv, { XDG_CACHE_HOME: fresh }));
        fs.rmSync(fresh, { recursive: true, force: true });
      }
    }
  } finally {
    fs.rmSync(caches, { recursive: true, force: true });
  }
  return {
    executable: summarize(warm),
    cold: summarize(cold),
    node: summarize(node),
    samples: { executable: warm, cold, node },
  };
}

// ---- 2. create and rm on the sandbox ----

interface Instants {
  vmAdded?: number;
  ipReported?: number;
  deletionMarked?: number;
  vmGone?: number;
  goReady?: Promise<number>;
  goRemoved?: Promise<number>;
}

/** Watches the machine's VM and VMI, and starts the Go-style waiters when Go would. */
function observe(admin: KubeClient, name: string): { instants: Instants; stop: () => void } {
  const instants: Instants = {};
  const at = { namespace: NS, fieldSelector: `metadata.name=${name}` };
  const vmWatch = admin.watch<KubeObject>(Resources.virtualMachine, at, (e) => {
    const now = performance.now();
    if (e.type === 'ADDED' && instants.vmAdded === undefined) {
      instants.vmAdded = now;
      instants.goReady = goStyleWaitReady(admin, NS, name);
    }
    if (e.object.metadata.deletionTimestamp && instants.deletionMarked === undefined) {
      instants.deletionMarked = now;
      instants.goRemoved = goStyleWaitRemoved(admin, NS, name);
    }
    if (e.type === 'DELETED') instants.vmGone = now;
  });
  const vmiWatch = admin.watch<VirtualMachineInstance>(Resources.virtualMachineInstance, at, (e) => {
    if (instants.ipReported === undefined && e.object.status?.interfaces?.[0]?.ipAddress)
      instants.ipReported = performance.now();
  });
  return {
    instants,
    stop: () => {
      vmWatch.stop();
      vmiWatch.stop();
    },
  };
}

interface Cycle {
  createMs: number;
  /** VM object created -> the guest agent reported the IP (the stand-ins' delays, mostly). */
  createVmToIpMs: number;
  /** How much later than the IP a Go-style 5 s poller would have stopped waiting. */
  createGoPollExtraMs: number;
  rmMs: number;
  /** VM marked for deletion -> gone (the stand-ins' shutdown, garbage collection). */
  rmDeleteToGoneMs: number;
  rmGoPollExtraMs: number;
  /** The IP (the watch) to create's end: the driver's lag, then rancher-machine after Create. */
  createAfterIpMs: number;
  /** The VM gone (the watch) to rm's end: the driver's lag, then rancher-machine after Remove. */
  rmAfterGoneMs: number;
}

const sleep = (t: number): Promise<void> => new Promise((r) => setTimeout(r, t));

async function benchSandbox(sandbox: Sandbox, executable: string, cycles: number): Promise<Cycle[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-plugin-bench-'));
  try {
    const binDir = path.join(work, 'bin');
    installPlugin(executable, binDir);
    const installScript = path.join(work, 'install.sh');
    fs.writeFileSync(installScript, INSTALL_SCRIPT, { mode: 0o600 });
    const kubeconfig = sandbox.kubeconfigs.harvesterViaRancher;
    registerSecret(kubeconfig);
    const cli = new MachineCli({
      binary: await rancherMachineBinary(),
      binDir,
      home: path.join(work, 'home'),
      tmpDir: path.join(work, 'tmp'),
      env: {
        HARVESTER_KUBECONFIG_CONTENT: kubeconfig,
        HARVESTER_CLUSTER_ID: sandbox.clusterId,
        HARVESTER_CLUSTER_TYPE: 'imported',
      },
    });
    const results: Cycle[] = [];
    // Cycle 0 is the untimed warm-up: the sandbox's first VM.
    for (let i = 0; i <= cycles; i++) {
      const name = `bench-pool1-6b7c8d9e0-c${i}`;
      cli.freshHome();
      const watch = observe(sandbox.harvester.admin, name);
      await sleep(300); // the watches are established
      try {
        const create = await cli.expect(
          rancherCreateArgs({
            instance: name,
            clusterName: 'bench',
            installScript,
            config: poolConfig(sandbox.seeds),
          }),
        );
        const createEnded = performance.now();
        const { instants } = watch;
        const goReady = await instants.goReady;
        const rm = await cli.expect(rancherRemoveArgs({ instance: name }));
        const rmEnded = performance.now();
        while (instants.vmGone === undefined) await sleep(20);
        const goRemoved = await instants.goRemoved;
        const need = (v: number | undefined, what: string): number => {
          if (v === undefined) throw new Error(`cycle ${i}: never saw ${what}`);
          return v;
        };
        const cycle: Cycle = {
          createMs: create.durationMs,
          createVmToIpMs: need(instants.ipReported, 'the IP') - need(instants.vmAdded, 'the VM'),
          createGoPollExtraMs:
            need(goReady, 'the Go-style create wait end') - need(instants.ipReported, 'the IP'),
          rmMs: rm.durationMs,
          rmDeleteToGoneMs:
            need(instants.vmGone, 'the VM gone') - need(instants.deletionMarked, 'the deletion'),
          rmGoPollExtraMs:
            need(goRemoved, 'the Go-style removal wait end') - need(instants.vmGone, 'the VM gone'),
          createAfterIpMs: createEnded - need(instants.ipReported, 'the IP'),
          rmAfterGoneMs: rmEnded - need(instants.vmGone, 'the VM gone'),
        };
        if (i === 0) {
          console.log(`  warm-up (untimed): create ${ms(cycle.createMs)}, rm ${ms(cycle.rmMs)}`);
          continue;
        }
        results.push(cycle);
        console.log(
          `  cycle ${i}: create ${ms(cycle.createMs)} (VM->IP ${ms(cycle.createVmToIpMs)}, 5 s poller +${ms(cycle.createGoPollExtraMs)}); ` +
            `rm ${ms(cycle.rmMs)} (delete->gone ${ms(cycle.rmDeleteToGoneMs)}, 5 s poller +${ms(cycle.rmGoPollExtraMs)})`,
        );
      } finally {
        watch.stop();
      }
    }
    return results;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

// ---- main ----

async function main(): Promise<void> {
  const runs = option('runs', 15);
  const cycles = option('cycles', 3);
  const root = repoRoot();
  const executable = await pluginExecutable();
  const sizeBytes = fs.statSync(executable).size;
  const nodeLts = embeddedNodeVersion(root);
  console.log(
    `plugin-bench on ${os.cpus().length} CPU(s), load ${os.loadavg()[0]?.toFixed(2)}; runs=${runs} cycles=${cycles}`,
  );
  console.log(
    `executable: ${mib(sizeBytes)} (static launcher, Node ${nodeLts}), baseline: node ${process.version} dist/src/plugin/main.js`,
  );

  const startup = await benchStartup(executable, runs);
  const row = (label: string, s: StartupSample): string =>
    `  ${label.padEnd(26)} first line ${ms(s.firstLineMs).padStart(7)}   RSS at first line ${mib(s.rssAtFirstLine).padStart(9)}` +
    `   after GetVersion+GetCreateFlags ${mib(s.rssAfterSession).padStart(9)}   peak ${mib(s.peakRss).padStart(9)}`;
  console.log(`start-up (median of ${runs}):`);
  console.log(row(`executable, warm`, startup.executable));
  console.log(row(`executable, cold (unpacks)`, startup.cold));
  console.log(row(`node ${process.version} main.js`, startup.node));

  let sandboxReport: Record<string, unknown> = { skipped: rancherMachineSkipReason() };
  const delays = DEFAULT_DELAYS;
  if (!rancherMachineSkipReason()) {
    const toRunning = delays.podStartMs + delays.scheduledMs;
    console.log(
      `sandbox stand-in delays: VMI Running ${toRunning} ms after its pod is bound (pod start ${delays.podStartMs} + scheduled ${delays.scheduledMs}; KubeVirt's own controllers add their time), ` +
        `IP ${delays.guestAgentMs} ms after Running, guest shutdown ${delays.shutdownMs} ms; Go-style poll interval ${GO_POLL_INTERVAL_MS} ms`,
    );
    const sandbox = await startSandbox();
    try {
      const results = await benchSandbox(sandbox, executable, cycles);
      const med = (key: keyof Cycle): number => median(results.map((c) => c[key]));
      const summary = {
        createMs: med('createMs'),
        createVmToIpMs: med('createVmToIpMs'),
        createGoPollExtraMs: med('createGoPollExtraMs'),
        rmMs: med('rmMs'),
        rmDeleteToGoneMs: med('rmDeleteToGoneMs'),
        rmGoPollExtraMs: med('rmGoPollExtraMs'),
        createAfterIpMs: med('createAfterIpMs'),
        rmAfterGoneMs: med('rmAfterGoneMs'),
      };
      const all = (key: keyof Cycle): string => showMs(results.map((c) => c[key]));
      console.log(`rancher-machine on the sandbox (median (lowest–highest) of ${cycles} warmed cycles):`);
      console.log(
        `  create ${all('createMs')}; IP to its end ${all('createAfterIpMs')} (the driver's lag + rancher-machine after Create); ` +
          `a 5 s poller saw the IP ${all('createGoPollExtraMs')} after it`,
      );
      console.log(
        `  rm     ${all('rmMs')}; VM gone to its end ${all('rmAfterGoneMs')} (the driver's lag + rancher-machine after Remove); ` +
          `a 5 s poller saw it gone ${all('rmGoPollExtraMs')} after it`,
      );
      console.log(
        `  create ${ms(summary.createMs)}: of it ${ms(summary.createVmToIpMs)} from VM creation to the IP (stand-ins), ` +
          `${ms(summary.createMs - summary.createVmToIpMs)} rancher-machine + plugin + driver; ` +
          `with Go's 5 s polling ~${ms(summary.createMs + summary.createGoPollExtraMs)}`,
      );
      console.log(
        `  rm     ${ms(summary.rmMs)}: of it ${ms(summary.rmDeleteToGoneMs)} from the delete to the VM gone (stand-ins, GC), ` +
          `${ms(summary.rmMs - summary.rmDeleteToGoneMs)} rancher-machine + plugin + driver; ` +
          `with Go's 5 s polling ~${ms(summary.rmMs + summary.rmGoPollExtraMs)}`,
      );
      sandboxReport = { delays, goPollIntervalMs: GO_POLL_INTERVAL_MS, median: summary, cycles: results };
    } finally {
      await sandbox.stop();
    }
  } else {
    console.log(`sandbox part skipped: ${String(rancherMachineSkipReason())}`);
  }

  const report = {
    date: new Date().toISOString(),
    host: { cpus: os.cpus().length, loadavg: os.loadavg(), node: process.version },
    executable: { sizeBytes, embeddedNode: nodeLts },
    startup: {
      runs,
      executable: startup.executable,
      cold: startup.cold,
      node: startup.node,
      samples: startup.samples,
    },
    sandbox: sandboxReport,
  };
  const dir = path.join(root, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `plugin-bench-${report.date.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  console.log(`report: ${path.relative(root, file)}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
});
