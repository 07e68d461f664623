// Benchmark (not a test) of the driver's lifecycle on the sandbox, with fixed stand-in delays:
// for create-to-IP, stop, start, restart and remove, how long our driver takes, how much of
// that is above the stand-ins' own delay, how long after the condition held it noticed, and
// how many API requests it made; side by side, in the same run, with an emulation of the Go
// driver's 120 x 5 s polling (bench/support/go-polling-baseline.ts).
//   "condition held": seen by an independent watch straight on the apiserver (not through
//   the front proxy), e.g. the VMI Running with an address; "lag" = the operation's end
//   minus that moment: what the waiting itself costs. Requests are counted at the front proxy,
//   which only the driver under test goes through (cross-checked with KubeClientOptions.onRequest).
//   Method (docs/decisions/0028-bench-method.md): one untimed create and remove first (KubeVirt's
//   controllers in the sandbox start their first VM several seconds slower), then `rounds`
//   interleaved lifecycles of each, medians with their spread; the condition's own time (the
//   sandbox's) and the lag (the driver's) are shown apart, so that a slow VM start is not read as
//   a slow driver.
// Run: npx tsc -p . && node dist/bench/driver-bench.js [rounds=3]; or `npm run bench`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { HarvesterDriver } from '../src/driver/harvester-driver.js';
import type { VirtualMachineInstance } from '../src/harvester/types.js';
import { Resources, type KubeObject, type ResourceType } from '../src/kube/resources.js';
import { waitFor } from '../src/kube/wait.js';
import { silentLogger } from '../src/log/logger.js';
import { startSandbox, type Sandbox } from '../sandbox/sandbox.js';
import type { Delays } from '../sandbox/standins/index.js';
import { machineFlags } from '../test/support/machines.js';
import { GO_POLL_INTERVAL_MS, GO_POLL_TRIES, GoPollingDriver } from './support/go-polling-baseline.js';
import { median, showMs, spread, type Spread } from './support/spread.js';

export const BENCH_DELAYS: Delays = {
  podStartMs: 300,
  scheduledMs: 500,
  guestAgentMs: 1_000,
  shutdownMs: 500,
};

const OPERATIONS = ['create-to-IP', 'stop', 'start', 'restart', 'remove'] as const;
type Operation = (typeof OPERATIONS)[number];
type Vmi = VirtualMachineInstance & KubeObject;

/** What the stand-ins themselves take for an operation (their configured delays). */
function standInDelayMs(op: Operation, d: Delays): number {
  const boot = d.podStartMs + d.scheduledMs + d.guestAgentMs;
  switch (op) {
    case 'create-to-IP':
    case 'start':
      return boot;
    case 'restart':
      return d.shutdownMs + boot;
    case 'stop':
    case 'remove':
      return d.shutdownMs;
  }
}

export interface Sample {
  totalMs: number;
  /** When the operation's end condition held, seen by an independent watch. */
  conditionMs: number;
  /** totalMs − conditionMs (at least 0): how long after the fact the waiter noticed. */
  lagMs: number;
  /** Requests that reached Harvester (counted at the front proxy). */
  requests: number;
  /** The same, counted by the client itself (KubeClientOptions.onRequest). */
  requestsSent: number;
}

export interface Summary {
  /** Medians over the rounds. */
  totalMs: number;
  /** The totals' median, lowest and highest. */
  total: Spread;
  /** When the condition held (the sandbox's own time: KubeVirt, the stand-ins), over the rounds. */
  condition: Spread;
  /** The lags' median, lowest and highest. */
  lag: Spread;
  /** totalMs − the stand-ins' configured delay. */
  addedMs: number;
  lagMs: number;
  requests: number;
  samples: Sample[];
}

export interface OperationFigures {
  operation: Operation;
  standInDelayMs: number;
  ours: Summary;
  goPolling: Summary;
  /** goPolling.lagMs / ours.lagMs: how much sooner our waits notice (target ≥ 10). */
  waitSpeedup: number;
  /** goPolling.addedMs / ours.addedMs. */
  addedLatencySpeedup: number;
  /** ours.requests / goPolling.requests (target ≤ 1). */
  requestRatio: number;
  meetsTargets: boolean;
}

/** One removal whose guest shutdown takes `shutdownMs`: requests as the wait grows longer. */
export interface SlowRemoval {
  shutdownMs: number;
  ours: Sample;
  goPolling: Sample;
}

export interface DriverBenchReport {
  bench: 'driver';
  date: string;
  rounds: number;
  /** The untimed create and remove before the rounds, and how long they took. */
  warmUpMs: { create: number; remove: number };
  standInDelaysMs: Delays;
  goPolling: { intervalMs: number; tries: number };
  operations: OperationFigures[];
  targets: { waitSpeedup: number; requestRatio: number };
  allTargetsMet: boolean;
  /**
   * Our removal reads what its safety needs (the VMI's hot-plug state, every PVC and VM of the
   * namespace) and checks for leftovers: a fixed cost, where polling pays per 5 s of waiting.
   */
  slowRemoval: SlowRemoval;
}

interface Lifecycle {
  create(): Promise<unknown>;
  stop(): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  remove(): Promise<void>;
  close(): void;
}

interface WaitCondition {
  type: ResourceType;
  until: (o: KubeObject | undefined) => boolean;
  description: string;
}

function conditionFor(op: Operation, oldVmiUid: string | undefined): WaitCondition {
  const withAddress = (o: KubeObject | undefined): boolean => {
    const vmi = o as Vmi | undefined;
    return vmi?.status?.phase === 'Running' && Boolean(vmi.status.interfaces?.[0]?.ipAddress);
  };
  switch (op) {
    case 'create-to-IP':
    case 'start':
      return {
        type: Resources.virtualMachineInstance,
        until: withAddress,
        description: 'the VMI running with an address',
      };
    case 'restart':
      return {
        type: Resources.virtualMachineInstance,
        until: (o) => withAddress(o) && o?.metadata.uid !== oldVmiUid,
        description: 'a new VMI running with an address',
      };
    case 'stop':
      return {
        type: Resources.virtualMachineInstance,
        until: (o) => o === undefined,
        description: 'the VMI gone',
      };
    case 'remove':
      return { type: Resources.virtualMachine, until: (o) => o === undefined, description: 'the VM gone' };
  }
}

class Bench {
  private sent = 0;
  constructor(
    private readonly sandbox: Sandbox,
    private readonly store: string,
  ) {}

  readonly onRequest = (): void => void this.sent++;

  ours(name: string): Lifecycle {
    const driver = new HarvesterDriver({
      logger: silentLogger,
      clientOptions: { onRequest: this.onRequest },
    });
    driver.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: name, StorePath: this.store })));
    driver.setConfigFromFlags(this.flags(name));
    return driver;
  }

  goPolling(name: string): Lifecycle {
    // The same flags, read by our driver only to get the config the Go driver would save.
    const reader = new HarvesterDriver({ logger: silentLogger });
    reader.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: name, StorePath: this.store })));
    reader.setConfigFromFlags(this.flags(name));
    return new GoPollingDriver(this.sandbox.kubeconfigs.harvesterDirect, reader.config, {
      onRequest: this.onRequest,
    });
  }

  private flags(name: string) {
    return machineFlags({
      name,
      kubeconfig: this.sandbox.kubeconfigs.harvesterDirect,
      storePath: this.store,
      clusterName: 'bench',
      flags: {
        'harvester-create-timeout': 600,
        'harvester-ip-timeout': 600,
        'harvester-remove-timeout': 600,
      },
    });
  }

  async measure(op: Operation, name: string, run: () => Promise<unknown>): Promise<Sample> {
    const { admin } = this.sandbox.harvester;
    await this.sandbox.standIns.idle();
    const at = { namespace: 'default', name };
    const oldVmi = op === 'restart' ? await admin.find<Vmi>(Resources.virtualMachineInstance, at) : undefined;
    const condition = conditionFor(op, oldVmi?.metadata.uid);
    this.sandbox.proxy.faults.resetCounts();
    this.sent = 0;
    let conditionAt: number | undefined;
    const started = performance.now();
    const observed = waitFor(admin, {
      ...at,
      type: condition.type,
      description: condition.description,
      timeoutMs: 15 * 60_000,
      until: (o) => {
        const holds = condition.until(o);
        if (holds) conditionAt ??= performance.now();
        return holds;
      },
    });
    await run();
    const ended = performance.now();
    await observed;
    const held = conditionAt ?? ended;
    return {
      totalMs: ended - started,
      conditionMs: held - started,
      // The watch's event can trail the driver's own read of the same state by a few ms: 0, not less.
      lagMs: Math.max(0, ended - held),
      requests: this.sandbox.proxy.faults.count(),
      requestsSent: this.sent,
    };
  }

  /** One create and remove with our driver, not measured: the sandbox's first VM. */
  async warmUp(name: string): Promise<{ create: number; remove: number }> {
    const driver = this.ours(name);
    try {
      const started = performance.now();
      await driver.create();
      const created = performance.now();
      await driver.remove();
      return { create: created - started, remove: performance.now() - created };
    } finally {
      driver.close();
    }
  }

  /** Creates the machine, then measures only its removal with the guest shutdown slowed down. */
  async slowRemoval(driver: Lifecycle, name: string, shutdownMs: number): Promise<Sample> {
    try {
      await driver.create();
      this.sandbox.standIns.configure({ delays: { shutdownMs } });
      try {
        return await this.measure('remove', name, () => driver.remove());
      } finally {
        this.sandbox.standIns.configure({ delays: { shutdownMs: BENCH_DELAYS.shutdownMs } });
      }
    } finally {
      driver.close();
    }
  }

  async lifecycle(driver: Lifecycle, name: string): Promise<Record<Operation, Sample>> {
    try {
      return {
        'create-to-IP': await this.measure('create-to-IP', name, () => driver.create()),
        stop: await this.measure('stop', name, () => driver.stop()),
        start: await this.measure('start', name, () => driver.start()),
        restart: await this.measure('restart', name, () => driver.restart()),
        remove: await this.measure('remove', name, () => driver.remove()),
      };
    } finally {
      driver.close();
    }
  }
}

function summarize(samples: Sample[], delay: number): Summary {
  const totalMs = median(samples.map((s) => s.totalMs));
  return {
    totalMs,
    total: spread(samples.map((s) => s.totalMs)),
    condition: spread(samples.map((s) => s.conditionMs)),
    lag: spread(samples.map((s) => s.lagMs)),
    addedMs: totalMs - delay,
    lagMs: median(samples.map((s) => s.lagMs)),
    requests: median(samples.map((s) => s.requests)),
    samples,
  };
}

export const TARGETS = { waitSpeedup: 10, requestRatio: 1 };

export interface DriverBenchOptions {
  /** Lifecycles per driver (default 3); the table shows medians. */
  rounds?: number;
  /** The guest shutdown of the extra slow removal (default 30 s). */
  slowShutdownMs?: number;
  log?: (line: string) => void;
}

export async function runDriverBench(opts: DriverBenchOptions = {}): Promise<DriverBenchReport> {
  const rounds = opts.rounds ?? 3;
  const log = opts.log ?? ((line: string) => console.log(line));
  const d = BENCH_DELAYS;
  log(
    `driver bench: stand-in delays pod start ${d.podStartMs} ms, scheduled ${d.scheduledMs} ms, ` +
      `guest agent ${d.guestAgentMs} ms, shutdown ${d.shutdownMs} ms; Go baseline polls every ${GO_POLL_INTERVAL_MS / 1000} s (max ${GO_POLL_TRIES}); ${rounds} round(s)`,
  );
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-bench-store-'));
  const sandbox = await startSandbox({ standIns: { delays: d } });
  const samples = {
    ours: [] as Array<Record<Operation, Sample>>,
    goPolling: [] as Array<Record<Operation, Sample>>,
  };
  let slowRemoval: SlowRemoval | undefined;
  let warmUpMs: { create: number; remove: number } | undefined;
  try {
    const bench = new Bench(sandbox, store);
    // Untimed: the sandbox's first VM (KubeVirt's controllers filling their caches, the first
    // launcher pod) is several seconds slower than the rest and would be whoever goes first.
    warmUpMs = await bench.warmUp('bench-warm-pool1-a1b2c-w0');
    log(
      `  warm-up (untimed): create ${Math.round(warmUpMs.create)} ms, remove ${Math.round(warmUpMs.remove)} ms`,
    );
    for (let r = 1; r <= rounds; r++) {
      // Interleaved, and who goes first alternates (ours, Go, Go, ours, ours, Go…), so both see
      // the same sandbox and neither always meets a warmer or busier one.
      const order = r % 2 ? (['ours', 'goPolling'] as const) : (['goPolling', 'ours'] as const);
      for (const kind of order) {
        const name = `bench-${kind === 'ours' ? 'ours' : 'go'}-r${r}-pool1-a1b2c-x${r}`;
        const started = performance.now();
        samples[kind].push(
          await bench.lifecycle(kind === 'ours' ? bench.ours(name) : bench.goPolling(name), name),
        );
        log(
          `  round ${r}: ${kind === 'ours' ? 'ours' : 'Go polling'} lifecycle in ${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
      }
    }
    const shutdownMs = opts.slowShutdownMs ?? 30_000;
    const ours = 'bench-ours-slow-pool1-a1b2c-x9';
    const go = 'bench-go-slow-pool1-a1b2c-x9';
    slowRemoval = {
      shutdownMs,
      ours: await bench.slowRemoval(bench.ours(ours), ours, shutdownMs),
      goPolling: await bench.slowRemoval(bench.goPolling(go), go, shutdownMs),
    };
  } finally {
    await sandbox.stop();
    fs.rmSync(store, { recursive: true, force: true });
  }

  const operations = OPERATIONS.map((operation): OperationFigures => {
    const delay = standInDelayMs(operation, d);
    const ours = summarize(
      samples.ours.map((s) => s[operation]),
      delay,
    );
    const goPolling = summarize(
      samples.goPolling.map((s) => s[operation]),
      delay,
    );
    const waitSpeedup = goPolling.lagMs / Math.max(ours.lagMs, 1);
    const requestRatio = ours.requests / Math.max(goPolling.requests, 1);
    return {
      operation,
      standInDelayMs: delay,
      ours,
      goPolling,
      waitSpeedup,
      addedLatencySpeedup: goPolling.addedMs / Math.max(ours.addedMs, 1),
      requestRatio,
      meetsTargets: waitSpeedup >= TARGETS.waitSpeedup && requestRatio <= TARGETS.requestRatio,
    };
  });
  const report: DriverBenchReport = {
    bench: 'driver',
    date: new Date().toISOString(),
    rounds,
    warmUpMs,
    standInDelaysMs: d,
    goPolling: { intervalMs: GO_POLL_INTERVAL_MS, tries: GO_POLL_TRIES },
    operations,
    targets: TARGETS,
    allTargetsMet: operations.every((o) => o.meetsTargets),
    slowRemoval: slowRemoval,
  };
  for (const line of formatTable(report)) log(line);
  return report;
}

export function formatTable(report: DriverBenchReport): string[] {
  const ms = (n: number): string => `${Math.round(n)} ms`;
  const header = [
    'operation',
    'stand-ins',
    'ours total',
    'ours added',
    'ours lag',
    'ours reqs',
    'Go total',
    'Go added',
    'Go lag',
    'Go reqs',
    'wait x',
    'added x',
    'req ratio',
  ];
  const rows = report.operations.map((o) => [
    o.operation,
    ms(o.standInDelayMs),
    ms(o.ours.totalMs),
    ms(o.ours.addedMs),
    ms(o.ours.lagMs),
    String(o.ours.requests),
    ms(o.goPolling.totalMs),
    ms(o.goPolling.addedMs),
    ms(o.goPolling.lagMs),
    String(o.goPolling.requests),
    `${o.waitSpeedup.toFixed(0)}x`,
    `${o.addedLatencySpeedup.toFixed(1)}x`,
    `${o.requestRatio.toFixed(2)}${o.meetsTargets ? '' : ' !'}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
  return [
    line(header),
    ...rows.map(line),
    `medians of ${report.rounds} round(s); "added" = total − the stand-ins' delay; "lag" = total − when the condition held (independent watch);`,
    `per operation, median (lowest–highest) of ${report.rounds} warmed, interleaved round(s):`,
    ...report.operations.flatMap((o) => [
      `  ${o.operation}: ours total ${showMs(o.ours.samples.map((x) => x.totalMs))}, lag ${showMs(o.ours.samples.map((x) => x.lagMs))}; ` +
        `Go total ${showMs(o.goPolling.samples.map((x) => x.totalMs))}, lag ${showMs(o.goPolling.samples.map((x) => x.lagMs))}`,
      `    condition held after: ours ${showMs(o.ours.samples.map((x) => x.conditionMs))}, Go ${showMs(o.goPolling.samples.map((x) => x.conditionMs))} (the sandbox's); ` +
        `the driver's difference (Go lag − ours lag): ${Math.round(o.goPolling.lagMs - o.ours.lagMs)} ms; ` +
        `total difference ${Math.round(o.goPolling.totalMs - o.ours.totalMs)} ms`,
    ]),
    `targets: wait ≥ ${report.targets.waitSpeedup}x faster and no more requests than the Go driver (req ratio ≤ ${report.targets.requestRatio}); "!" = not met`,
    `remove with a ${report.slowRemoval.shutdownMs / 1000} s guest shutdown: ours ${ms(report.slowRemoval.ours.totalMs)}, ${report.slowRemoval.ours.requests} requests; ` +
      `Go polling ${ms(report.slowRemoval.goPolling.totalMs)}, ${report.slowRemoval.goPolling.requests} requests`,
  ];
}

/** bench/results/ of the repository (gitignored). */
export function resultsDir(): string {
  const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const rounds = Number(process.argv[2] ?? 3);
  runDriverBench({ rounds })
    .then((report) => {
      const file = path.join(resultsDir(), 'driver-bench.json');
      fs.writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
      console.log(`report: ${file}`);
    })
    .catch((err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    });
}
