// Benchmark (not a test): a create job through the real rancher-machine, phase by phase (each
// plugin process's start, the plugin handshake, SetConfigFromFlags, PreCreateCheck, the SSH
// key, the VM sent, the stand-ins' own time from the VM to its address, the driver noticing
// it, what follows Create), median of --cycles, and the same for rm. The comparison basis
// is measured in the run: the stand-ins' time from the VM's creation to the address its
// instance reports, seen by an independent watch (so a change of the stand-ins' delays, or
// the real KubeVirt in their place, moves the basis with it). Goal: create within 0.5 s of it.
// Baseline in the same run, optional: --baseline=<commit> builds that commit's executable
// (support/older-executable.ts) and alternates its cycles with ours on the same sandbox.
// Beside each total, the driver's own lag (docs/decisions/0028-bench-method.md): for create, the
// phase "driver notices the address" (the address seen by the watch to the driver's IP line);
// for rm, the time from the VM gone (the watch) to the command's end, which also holds
// rancher-machine's own steps after Remove: an upper bound of the driver's lag.
// Run: npx tsc -p . && node dist/bench/create-phases.js [--cycles=5] [--baseline=<commit>]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { KubeClient } from '../src/kube/client.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import type { VirtualMachineInstance } from '../src/harvester/types.js';
import { registerSecret } from '../src/log/redact.js';
import { startSandbox, type Sandbox } from '../sandbox/sandbox.js';
import { pluginExecutable } from '../sandbox/rancher-machine/plugin-executable.js';
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
import {
  CREATE_LAG_PHASE,
  createBreakdown,
  type CreateBreakdown,
  type Observed,
} from './support/create-phases.js';
import { startByteCounter, type ByteCounter } from './support/byte-counter.js';
import { buildExecutableAt } from './support/older-executable.js';
import { median, showMs } from './support/spread.js';
import { TRACE_ENV, installTracingPlugin, readTrace } from './support/plugin-trace.js';

export const CREATE_GOAL_MS = 500;

export interface PhaseFigure {
  name: string;
  whose: 'ours' | 'stand-ins';
  medianMs: number;
}

export interface CreatePhasesSummary {
  label: string;
  cycles: number;
  createMs: number;
  /** The stand-ins' own time (VM to address), median. */
  standInsMs: number;
  /** createMs − standInsMs, median of the per-cycle differences. */
  oursMs: number;
  rmMs: number;
  /** The driver's lag on create (CREATE_LAG_PHASE), median. */
  lagMs: number;
  /** From the VM gone to rm's end (an upper bound of the driver's lag on rm), median. */
  rmAfterGoneMs: number;
  /** Requests of the create job that reached Harvester (at the front proxy), median. */
  requests: number;
  /** Bytes the create job read from Harvester through Rancher's path (on the wire), median. */
  bytesRead: number;
  phases: PhaseFigure[];
  samples: Array<CreateBreakdown & { requests: number; bytesRead: number }>;
  rmSamples: number[];
  rmAfterGoneSamples: number[];
}

export interface CreatePhasesReport {
  bench: 'create-phases';
  date: string;
  goalMs: number;
  ours: CreatePhasesSummary;
  baseline?: CreatePhasesSummary & { commit: string };
  goalMet: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Watches the machine's VM and instance from the outside (straight on the apiserver). */
function observe(admin: KubeClient, namespace: string, name: string): { seen: Observed; stop: () => void } {
  const seen: Observed = { phases: {} };
  const at = { namespace, fieldSelector: `metadata.name=${name}` };
  const vm = admin.watch<KubeObject>(Resources.virtualMachine, at, (e) => {
    if (e.type === 'ADDED') seen.vmAdded ??= Date.now();
    if (e.type === 'DELETED') seen.vmGone ??= Date.now();
  });
  const vmi = admin.watch<VirtualMachineInstance & KubeObject>(Resources.virtualMachineInstance, at, (e) => {
    const now = Date.now();
    if (e.type === 'ADDED') seen.vmiAdded ??= now;
    const phase = e.object.status?.phase;
    if (phase) seen.phases[phase] ??= now;
    if (e.object.status?.interfaces?.some((i) => i.ipAddress)) seen.ipReported ??= now;
  });
  return {
    seen,
    stop: () => {
      vm.stop();
      vmi.stop();
    },
  };
}

interface Runner {
  label: string;
  cli: MachineCli;
  trace: string;
}

type CycleResult = {
  create: CreateBreakdown & { requests: number; bytesRead: number };
  rmMs: number;
  /** From the VM gone (the watch) to the rm command's end. */
  rmAfterGoneMs: number;
};
const lagOf = (b: CreateBreakdown): number => b.phases.find((p) => p.name === CREATE_LAG_PHASE)?.ms ?? NaN;

async function cycle(
  sandbox: Sandbox,
  counter: ByteCounter,
  runner: Runner,
  name: string,
  installScript: string,
): Promise<CycleResult> {
  runner.cli.freshHome();
  fs.rmSync(runner.trace, { force: true });
  const watch = observe(sandbox.harvester.admin, sandbox.seeds.namespace, name);
  try {
    await sleep(300); // the watches are established
    sandbox.proxy.faults.resetCounts();
    counter.reset();
    const started = Date.now();
    const create = await runner.cli.expect(
      rancherCreateArgs({
        instance: name,
        clusterName: 'bench',
        installScript,
        config: poolConfig(sandbox.seeds),
      }),
    );
    const breakdown = createBreakdown(
      readTrace(runner.trace),
      watch.seen,
      started,
      started + create.durationMs,
    );
    const traffic = { requests: sandbox.proxy.faults.count(), bytesRead: counter.read };
    const rmStarted = Date.now();
    const rm = await runner.cli.expect(rancherRemoveArgs({ instance: name }));
    const rmEnded = rmStarted + rm.durationMs;
    for (let i = 0; i < 50 && watch.seen.vmGone === undefined; i++) await sleep(20);
    return {
      create: { ...breakdown, ...traffic },
      rmMs: rm.durationMs,
      rmAfterGoneMs: Math.max(0, rmEnded - (watch.seen.vmGone ?? rmEnded)),
    };
  } finally {
    watch.stop();
  }
}

function summarize(label: string, runs: CycleResult[]): CreatePhasesSummary {
  const samples = runs.map((r) => r.create);
  const names = samples[0]?.phases ?? [];
  return {
    label,
    cycles: runs.length,
    createMs: median(samples.map((s) => s.totalMs)),
    standInsMs: median(samples.map((s) => s.standInsMs)),
    oursMs: median(samples.map((s) => s.oursMs)),
    rmMs: median(runs.map((r) => r.rmMs)),
    lagMs: median(samples.map(lagOf)),
    rmAfterGoneMs: median(runs.map((r) => r.rmAfterGoneMs)),
    requests: median(samples.map((s) => s.requests)),
    bytesRead: median(samples.map((s) => s.bytesRead)),
    phases: names.map((p, i) => ({
      name: p.name,
      whose: p.whose,
      medianMs: median(samples.map((s) => s.phases[i]?.ms ?? NaN)),
    })),
    samples,
    rmSamples: runs.map((r) => r.rmMs),
    rmAfterGoneSamples: runs.map((r) => r.rmAfterGoneMs),
  };
}

export function formatCreatePhases(report: CreatePhasesReport): string[] {
  const ms = (v: number): string => `${Math.round(v)} ms`;
  const lines: string[] = [];
  const both = [report.ours, ...(report.baseline ? [report.baseline] : [])];
  const width = Math.max(...both[0]!.phases.map((p) => p.name.length));
  lines.push(
    `create phases (median of ${report.ours.cycles}${report.baseline ? `; baseline ${report.baseline.commit.slice(0, 10)} alternated` : ''}):`,
  );
  lines.push(`  ${'phase'.padEnd(width)}  ${both.map((s) => s.label.padStart(10)).join('  ')}`);
  report.ours.phases.forEach((p, i) => {
    const cells = both.map((s) => ms(s.phases[i]?.medianMs ?? NaN).padStart(10));
    lines.push(`  ${`${p.name}${p.whose === 'stand-ins' ? ' *' : ''}`.padEnd(width)}  ${cells.join('  ')}`);
  });
  lines.push(`  (* the stand-ins' own time)`);
  for (const s of both) {
    lines.push(
      `scale: create through rancher-machine (${s.label}): ${ms(s.createMs)}, ${s.requests} requests, ${Math.round(s.bytesRead / 1024)} KB read; ` +
        `${ms(s.oursMs)} above the stand-ins' ${ms(s.standInsMs)} ` +
        `(goal ≤ ${ms(report.goalMs)}${s === report.ours ? (report.goalMet ? ', met' : ', NOT met') : ''}); rm ${ms(s.rmMs)}`,
    );
    lines.push(
      `  ${s.label}, median (lowest–highest) of ${s.cycles} warmed cycles: create ${showMs(s.samples.map((x) => x.totalMs))}, ` +
        `the stand-ins' and KubeVirt's ${showMs(s.samples.map((x) => x.standInsMs))}, the driver's lag ${showMs(s.samples.map(lagOf))}; ` +
        `rm ${showMs(s.rmSamples)}, from the VM gone to its end ${showMs(s.rmAfterGoneSamples)}`,
    );
  }
  return lines;
}

export interface CreatePhasesOptions {
  cycles?: number;
  /** A commit whose executable runs beside ours, cycle by cycle. */
  baseline?: string;
  log?: (line: string) => void;
}

export async function runCreatePhasesBench(
  opts: CreatePhasesOptions = {},
): Promise<CreatePhasesReport | { skipped: string }> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const skip = rancherMachineSkipReason();
  if (skip) {
    log(`create phases skipped: ${skip}`);
    return { skipped: skip };
  }
  const cycles = opts.cycles ?? 5;
  const baselineCommit = opts.baseline ?? process.env.BENCH_CREATE_BASELINE;
  const older = baselineCommit ? await buildExecutableAt(baselineCommit) : undefined;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-create-phases-'));
  const sandbox = await startSandbox();
  const front = new URL(sandbox.proxy.url);
  const counter = await startByteCounter({ host: front.hostname, port: Number(front.port) });
  try {
    const installScript = path.join(work, 'install.sh');
    fs.writeFileSync(installScript, INSTALL_SCRIPT, { mode: 0o600 });
    const kubeconfig = counter.kubeconfigThrough(sandbox.kubeconfigs.harvesterViaRancher);
    registerSecret(kubeconfig);
    const binary = await rancherMachineBinary();
    const runner = (label: string, executable: string): Runner => {
      const dir = path.join(work, label);
      const trace = path.join(dir, 'trace');
      const binDir = path.join(dir, 'bin');
      installTracingPlugin(executable, binDir);
      return {
        label,
        trace,
        cli: new MachineCli({
          binary,
          binDir,
          home: path.join(dir, 'home'),
          tmpDir: path.join(dir, 'tmp'),
          env: {
            HARVESTER_KUBECONFIG_CONTENT: kubeconfig,
            HARVESTER_CLUSTER_ID: sandbox.clusterId,
            HARVESTER_CLUSTER_TYPE: 'imported',
            [TRACE_ENV]: trace,
          },
        }),
      };
    };
    const runners = [
      runner('ours', await pluginExecutable()),
      ...(older ? [runner('baseline', older.path)] : []),
    ];
    const results = new Map<string, CycleResult[]>();
    // One warm-up each (page cache, the runtime unpacked), then alternating, first one then the other.
    for (const r of runners)
      await cycle(sandbox, counter, r, `warm-${r.label}-pool1-6b7c8d9e0-w0`, installScript);
    for (let i = 1; i <= cycles; i++) {
      const order = i % 2 ? runners : [...runners].reverse();
      for (const r of order) {
        const result = await cycle(sandbox, counter, r, `${r.label}-pool1-6b7c8d9e0-c${i}`, installScript);
        results.set(r.label, [...(results.get(r.label) ?? []), result]);
        log(
          `  cycle ${i} ${r.label}: create ${Math.round(result.create.totalMs)} ms (stand-ins ${Math.round(result.create.standInsMs)} ms, ` +
            `${result.create.requests} requests, ${Math.round(result.create.bytesRead / 1024)} KB read, lag ${Math.round(lagOf(result.create))} ms), ` +
            `rm ${result.rmMs} ms (${Math.round(result.rmAfterGoneMs)} ms after the VM gone)`,
        );
      }
    }
    const ours = summarize('ours', results.get('ours') ?? []);
    const report: CreatePhasesReport = {
      bench: 'create-phases',
      date: new Date().toISOString(),
      goalMs: CREATE_GOAL_MS,
      ours,
      ...(older
        ? { baseline: { ...summarize('baseline', results.get('baseline') ?? []), commit: older.commit } }
        : {}),
      goalMet: ours.oursMs <= CREATE_GOAL_MS,
    };
    for (const line of formatCreatePhases(report)) log(line);
    return report;
  } finally {
    await counter.stop();
    await sandbox.stop();
    fs.rmSync(work, { recursive: true, force: true });
    older?.remove();
  }
}

function option(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const cycles = Number(option('cycles') ?? 5);
  const baseline = option('baseline');
  runCreatePhasesBench({ cycles, ...(baseline ? { baseline } : {}) }).catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
