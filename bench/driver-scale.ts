// Benchmark (not a test): what the driver's Create and Remove (plain and whole-cluster) cost
// beside 0, 500 and 2,000 other VMs with their PVCs in the machine's namespace, through
// Rancher's /k8s/clusters/<id> path as a real job's driver reaches Harvester: wall time,
// requests (at the sandbox's front proxy) and bytes read on the wire (a byte-counting relay in
// front of it, support/byte-counter.ts). Baseline in the same run: the Go driver's request
// pattern (support/go-polling-baseline.ts: one GET, [a LIST of the cluster's PVCs], one PUT,
// one DELETE and its 5 s polls) for the same operations.
// The other VMs are generated as the driver builds a machine's VM (other guest clusters of
// five, cloud-init inline, a boot disk each), halted, with the finalizers Harvester and KubeVirt
// would add already on, and their boot PVCs, written straight to the apiserver in parallel
// batches; the set-up time is printed. Everything lives in the benchmark's own sandbox, which
// is stopped (and its data removed) at the end.
// Method (docs/decisions/0028-bench-method.md): one untimed create and remove before anything is
// timed (the sandbox's first VM is seconds slower), ours and the Go pattern interleaved round by
// round, medians with their spread, and beside every time the driver's own lag: from the moment
// an independent watch saw what the driver waits for (the instance's address, the VM gone) to
// the driver returning.
// Goals (issue 24): beside 2,000 VMs, rm reads at most 2x the bytes and takes at most 1.5x the
// time it takes alone.
// Run: npx tsc -p . && node dist/bench/driver-scale.js [--rounds=3] [--sizes=0,500,2000]
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { keyText } from '../src/api/object-key.js';
import { HarvesterDriver } from '../src/driver/harvester-driver.js';
import { ANNOTATION_REMOVE_ALL_PVCS, ANNOTATION_VOLUME_CLAIM_TEMPLATES } from '../src/harvester/labels.js';
import type {
  PersistentVolumeClaim,
  VirtualMachine,
  VirtualMachineInstance,
} from '../src/harvester/types.js';
import { buildVirtualMachine } from '../src/harvester/vm-spec.js';
import type { KubeClient } from '../src/kube/client.js';
import { isKubeError } from '../src/kube/errors.js';
import { Resources, type KubeObject, type ResourceType } from '../src/kube/resources.js';
import { waitFor } from '../src/kube/wait.js';
import { silentLogger } from '../src/log/logger.js';
import { startSandbox, type Sandbox } from '../sandbox/sandbox.js';
import { Finalizers } from '../sandbox/standins/names.js';
import { machineFlags } from '../test/support/machines.js';
import { recordedVolume } from '../test/support/volumes.js';
import { startByteCounter, type ByteCounter } from './support/byte-counter.js';
import { GoPollingDriver } from './support/go-polling-baseline.js';
import { median, showMs, spread, type Spread } from './support/spread.js';

export const SCALE_GOALS = { rmBytesRatio: 2, rmTimeRatio: 1.5 };
const NS = 'default';
const CLUSTER = 'bench';
/** Other guest clusters of this many machines each. */
const CROWD_CLUSTER_SIZE = 5;
const PARALLEL_WRITES = 16;

export type ScaleOperation = 'create' | 'rm' | 'rm whole-cluster';

export interface ScaleSample {
  ms: number;
  /**
   * The driver's own lag: the operation's end minus when an independent watch (straight on the
   * apiserver) saw what it waits for: the instance's address for a create, the VM gone for a
   * removal. What KubeVirt and Harvester take is before that moment and not in it.
   */
  lagMs: number;
  /** From the start until the watch saw that (the sandbox's own time, and the driver's requests). */
  conditionMs: number;
  requests: number;
  bytesRead: number;
  /**
   * For a removal: until the DELETE of the VM was sent (the driver's reads and its record), from
   * then until an independent watch saw the VM gone (the sandbox deleting it: guest shutdown,
   * garbage collection, Harvester's and KubeVirt's finalizers), and the rest (noticing it,
   * leftovers, the address claims).
   */
  split?: { untilDeleteMs: number; deletionMs: number; afterMs: number };
}

export interface ScaleFigure {
  driver: 'ours' | 'go-pattern';
  operation: ScaleOperation;
  otherVms: number;
  /** Medians over the rounds. */
  ms: number;
  lagMs: number;
  /** The times' and the lags' median, lowest and highest. */
  spread: { ms: Spread; lagMs: Spread; conditionMs: Spread };
  requests: number;
  bytesRead: number;
  /** Medians of the removal's parts (see ScaleSample.split). */
  split?: { untilDeleteMs: number; deletionMs: number; afterMs: number };
  samples: ScaleSample[];
}

export interface DriverScaleReport {
  bench: 'driver-scale';
  date: string;
  rounds: number;
  goRounds: number;
  sizes: number[];
  /** The untimed create and remove before anything is measured. */
  warmUpMs: { create: number; remove: number };
  /** seconds: writing the crowd; boundSeconds: then until the volume binder had bound every claim. */
  setUp: Array<{ otherVms: number; addedVms: number; seconds: number; boundSeconds: number }>;
  figures: ScaleFigure[];
  goals: typeof SCALE_GOALS;
  /** rm and rm whole-cluster, ours, at the largest size against alone. */
  goalsMet: boolean;
}

async function inBatches<T>(items: T[], each: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await each(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_WRITES, items.length) }, worker));
}

/** Creates, and takes an AlreadyExists as done (a retried create the apiserver had carried out). */
async function put(admin: KubeClient, type: ResourceType, obj: KubeObject): Promise<void> {
  try {
    await admin.create(type, obj);
  } catch (err) {
    if (!isKubeError(err, 'AlreadyExists')) throw err;
  }
}

class Crowd {
  count = 0;
  private readonly key = crypto.generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x ?? '';
  private storageClass: string | undefined;

  constructor(
    private readonly sandbox: Sandbox,
    private readonly store: string,
  ) {}

  /** The VM and boot PVC of crowd machine i, as the driver would make them, halted. */
  private objects(i: number): { vm: VirtualMachine; pvc: PersistentVolumeClaim } {
    const cluster = `crowd-${String(Math.floor(i / CROWD_CLUSTER_SIZE)).padStart(4, '0')}`;
    const name = `${cluster}-pool1-5d8f7c9b4-${String(i).padStart(5, '0')}`;
    const reader = new HarvesterDriver({ logger: silentLogger });
    reader.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: name, StorePath: this.store })));
    reader.setConfigFromFlags(
      machineFlags({
        name,
        kubeconfig: this.sandbox.kubeconfigs.harvesterDirect,
        storePath: this.store,
        clusterName: cluster,
        flags: {
          'harvester-user-data': '#cloud-config\npackage_update: true\npackages:\n  - qemu-guest-agent\n',
        },
      }),
    );
    const { vm } = buildVirtualMachine(reader.config, {
      sshPublicKey: `ssh-ed25519 ${this.key} ${name}`,
      random: () => crypto.randomBytes(4).toString('hex').slice(0, 5),
      imageStorageClass: () => this.storageClass,
    });
    vm.spec.runStrategy = 'Halted';
    vm.metadata.finalizers = [Finalizers.harvesterVmCleanup, Finalizers.kubevirtVmController];
    const [template] = JSON.parse(
      vm.metadata.annotations?.[ANNOTATION_VOLUME_CLAIM_TEMPLATES] ?? '[]',
    ) as PersistentVolumeClaim[];
    if (!template) throw new Error('the crowd VM has no volume claim template');
    const pvc: PersistentVolumeClaim = {
      ...template,
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { ...template.metadata, namespace: NS, finalizers: [Finalizers.harvesterPvc] },
    };
    return { vm, pvc };
  }

  /** Grows the crowd to `total` VMs; resolves once the stand-ins have caught up. */
  async growTo(total: number): Promise<{ addedVms: number; seconds: number; boundSeconds: number }> {
    const started = performance.now();
    if (this.storageClass === undefined) {
      const [namespace = NS, name = ''] = this.sandbox.seeds.image.includes('/')
        ? this.sandbox.seeds.image.split('/')
        : [this.sandbox.seeds.namespace, this.sandbox.seeds.image];
      const image = await this.sandbox.harvester.admin.get<
        KubeObject & { status?: { storageClassName?: string } }
      >(Resources.virtualMachineImage, { namespace, name });
      this.storageClass = image.status?.storageClassName;
    }
    const wanted = Array.from({ length: Math.max(0, total - this.count) }, (_, k) => this.count + k);
    const { admin } = this.sandbox.harvester;
    await inBatches(wanted, async (i) => {
      const { vm, pvc } = this.objects(i);
      await put(admin, Resources.pvc, pvc);
      await put(admin, Resources.virtualMachine, vm);
    });
    this.count = total;
    await this.sandbox.standIns.idle();
    const writtenSeconds = (performance.now() - started) / 1000;
    // kube-controller-manager's volume binder works through the new claims one by one; a VM
    // created before it has caught up waits behind them (beside 2,000, over 5 min on a loaded
    // machine): not the driver's time, so the timed rounds start once every claim is Bound.
    const unbound = (
      await admin.list<PersistentVolumeClaim & KubeObject>(Resources.pvc, { namespace: NS })
    ).items
      .filter((c) => c.status?.phase !== 'Bound')
      .map((c) => c.metadata.name);
    for (const name of unbound)
      await waitFor<PersistentVolumeClaim & KubeObject>(admin, {
        type: Resources.pvc,
        namespace: NS,
        name,
        description: `the crowd's PVC ${keyText(NS, name)} to be Bound`,
        until: (c) => c?.status?.phase === 'Bound',
        timeoutMs: 15 * 60_000,
      });
    return {
      addedVms: wanted.length,
      seconds: writtenSeconds,
      boundSeconds: (performance.now() - started) / 1000 - writtenSeconds,
    };
  }
}

interface Lifecycle {
  create(): Promise<unknown>;
  remove(): Promise<void>;
  close(): void;
}

class Bench {
  private round = 0;
  constructor(
    private readonly sandbox: Sandbox,
    private readonly counter: ByteCounter,
    private readonly store: string,
  ) {}

  private flags(name: string) {
    return machineFlags({
      name,
      kubeconfig: this.counter.kubeconfigThrough(this.sandbox.kubeconfigs.harvesterViaRancher),
      storePath: this.store,
      clusterName: CLUSTER,
      flags: {
        'harvester-create-timeout': 300,
        'harvester-ip-timeout': 300,
        'harvester-remove-timeout': 300,
      },
    });
  }

  /** When the DELETE of the machine's VM was last sent. */
  private deleteSentAt: number | undefined;
  private readonly onRequest = (method: string, path: string): void => {
    if (method === 'DELETE' && /\/virtualmachines\/[^/?]+$/.test(path.split('?')[0] ?? ''))
      this.deleteSentAt = performance.now();
  };

  machine(driver: 'ours' | 'go-pattern', name: string): Lifecycle {
    const ours = new HarvesterDriver({ logger: silentLogger, clientOptions: { onRequest: this.onRequest } });
    ours.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: name, StorePath: this.store })));
    ours.setConfigFromFlags(this.flags(name));
    if (driver === 'ours') return ours;
    return new GoPollingDriver(
      this.counter.kubeconfigThrough(this.sandbox.kubeconfigs.harvesterViaRancher),
      ours.config,
      { onRequest: this.onRequest },
    );
  }

  nextName(driver: 'ours' | 'go-pattern'): string {
    this.round++;
    return `${CLUSTER}-pool1-6c7d8e9f0-${driver === 'ours' ? 'o' : 'g'}${String(this.round).padStart(4, '0')}`;
  }

  /** Times `run`, the create or removal of machine `name`, with the driver's lag beside it. */
  async measure(run: () => Promise<unknown>, op: 'create' | 'remove', name: string): Promise<ScaleSample> {
    await this.sandbox.standIns.idle();
    let goneAt: number | undefined;
    let addressAt: number | undefined;
    const at = { namespace: NS, fieldSelector: `metadata.name=${name}` };
    const { admin } = this.sandbox.harvester;
    const removing = op === 'remove';
    const watch = removing
      ? admin.watch<KubeObject>(Resources.virtualMachine, at, (e) => {
          if (e.type === 'DELETED') goneAt ??= performance.now();
        })
      : admin.watch<VirtualMachineInstance & KubeObject>(Resources.virtualMachineInstance, at, (e) => {
          if (e.type !== 'DELETED' && e.object.status?.interfaces?.[0]?.ipAddress)
            addressAt ??= performance.now();
        });
    try {
      await new Promise((r) => setTimeout(r, 200)); // the watch is established
      this.sandbox.proxy.faults.resetCounts();
      this.counter.reset();
      this.deleteSentAt = undefined;
      const started = performance.now();
      await run();
      const ended = performance.now();
      // A watch event can trail the driver's own read by a few ms: the lag is then 0, not negative.
      const condition = (removing ? goneAt : addressAt) ?? ended;
      const sample: ScaleSample = {
        ms: ended - started,
        lagMs: Math.max(0, ended - condition),
        conditionMs: Math.min(condition, ended) - started,
        requests: this.sandbox.proxy.faults.count(),
        bytesRead: this.counter.read,
      };
      if (removing && this.deleteSentAt !== undefined) {
        const gone = goneAt ?? ended;
        sample.split = {
          untilDeleteMs: this.deleteSentAt - started,
          deletionMs: gone - this.deleteSentAt,
          afterMs: ended - gone,
        };
      }
      return sample;
    } finally {
      watch.stop();
    }
  }

  /** One create and remove with our driver, not measured: the sandbox's first VM. */
  async warmUp(): Promise<{ create: number; remove: number }> {
    const name = `${CLUSTER}-pool1-6c7d8e9f0-w0000`;
    const machine = this.machine('ours', name);
    try {
      const started = performance.now();
      await machine.create();
      const created = performance.now();
      await machine.remove();
      return { create: created - started, remove: performance.now() - created };
    } finally {
      machine.close();
    }
  }

  /** Rancher's whole-cluster deletion of this machine: a workload volume hot-plugged, one unattached, the VM marked. */
  async markWholeCluster(name: string): Promise<void> {
    const { csi } = this.sandbox.standIns;
    const { admin } = this.sandbox.harvester;
    // Labelled for the cluster as the cleanup controller records a guest's volumes.
    const hot = await recordedVolume(csi, admin, { namespace: NS, cluster: CLUSTER, size: '1Gi' });
    await csi.hotplug({ namespace: NS, vmName: name, pvcName: hot });
    await recordedVolume(csi, admin, { namespace: NS, cluster: CLUSTER, size: '1Gi' });
    await this.sandbox.harvester.admin.patch(
      Resources.virtualMachine,
      { namespace: NS, name },
      { metadata: { annotations: { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' } } },
    );
  }
}

export interface DriverScaleOptions {
  rounds?: number;
  sizes?: number[];
  /** Rounds of the Go driver's pattern (each waits out 5 s polls); default `rounds`. */
  goRounds?: number;
  log?: (line: string) => void;
}

export async function runDriverScaleBench(opts: DriverScaleOptions = {}): Promise<DriverScaleReport> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const rounds = opts.rounds ?? 3;
  const goRounds = opts.goRounds ?? rounds;
  const sizes = [...(opts.sizes ?? [0, 2000])].sort((a, b) => a - b);
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-scale-store-'));
  const sandbox = await startSandbox();
  const front = new URL(sandbox.proxy.url);
  const counter = await startByteCounter({ host: front.hostname, port: Number(front.port) });
  const figures: ScaleFigure[] = [];
  const setUp: DriverScaleReport['setUp'] = [];
  let warmUpMs: { create: number; remove: number } | undefined;
  try {
    const crowd = new Crowd(sandbox, store);
    const bench = new Bench(sandbox, counter, store);
    warmUpMs = await bench.warmUp();
    log(
      `scale: warm-up (untimed, the sandbox's first VM): create ${Math.round(warmUpMs.create)} ms, remove ${Math.round(warmUpMs.remove)} ms`,
    );
    for (const size of sizes) {
      const grown = await crowd.growTo(size);
      setUp.push({ otherVms: size, ...grown });
      if (grown.addedVms > 0)
        log(
          `scale: set-up of ${grown.addedVms} more VMs and their PVCs (${size} in all): ${grown.seconds.toFixed(1)} s, ` +
            `then ${grown.boundSeconds.toFixed(1)} s until every claim was Bound`,
        );
      const samples = new Map<string, ScaleSample[]>();
      const add = (driver: ScaleFigure['driver'], op: ScaleOperation, s: ScaleSample): void => {
        const k = `${driver}|${op}`;
        samples.set(k, [...(samples.get(k) ?? []), s]);
      };
      // Interleaved round by round, who goes first alternating, so both meet the same sandbox.
      for (let r = 0; r < Math.max(rounds, goRounds); r++) {
        const order = r % 2 ? (['go-pattern', 'ours'] as const) : (['ours', 'go-pattern'] as const);
        for (const driver of order) {
          if (r >= (driver === 'ours' ? rounds : goRounds)) continue;
          for (const whole of [false, true]) {
            const name = bench.nextName(driver);
            const machine = bench.machine(driver, name);
            try {
              const created = await bench.measure(() => machine.create(), 'create', name);
              if (!whole) add(driver, 'create', created);
              if (whole) await bench.markWholeCluster(name);
              add(
                driver,
                whole ? 'rm whole-cluster' : 'rm',
                await bench.measure(() => machine.remove(), 'remove', name),
              );
            } finally {
              machine.close();
            }
          }
        }
      }
      for (const [k, s] of samples) {
        const [driver, operation] = k.split('|') as [ScaleFigure['driver'], ScaleOperation];
        figures.push({
          driver,
          operation,
          otherVms: size,
          ms: median(s.map((x) => x.ms)),
          lagMs: median(s.map((x) => x.lagMs)),
          spread: {
            ms: spread(s.map((x) => x.ms)),
            lagMs: spread(s.map((x) => x.lagMs)),
            conditionMs: spread(s.map((x) => x.conditionMs)),
          },
          requests: median(s.map((x) => x.requests)),
          bytesRead: median(s.map((x) => x.bytesRead)),
          ...(s.every((x) => x.split)
            ? {
                split: {
                  untilDeleteMs: median(s.map((x) => x.split?.untilDeleteMs ?? NaN)),
                  deletionMs: median(s.map((x) => x.split?.deletionMs ?? NaN)),
                  afterMs: median(s.map((x) => x.split?.afterMs ?? NaN)),
                },
              }
            : {}),
          samples: s,
        });
      }
      for (const line of formatScale(
        figures.filter((f) => f.otherVms === size),
        figures,
      ))
        log(line);
    }
  } finally {
    await counter.stop();
    await sandbox.stop();
    fs.rmSync(store, { recursive: true, force: true });
  }
  const largest = sizes[sizes.length - 1] ?? 0;
  const goalsMet = (['rm', 'rm whole-cluster'] as const).every((op) => {
    const alone = figures.find((f) => f.driver === 'ours' && f.operation === op && f.otherVms === 0);
    const crowded = figures.find((f) => f.driver === 'ours' && f.operation === op && f.otherVms === largest);
    if (!alone || !crowded) return false;
    return (
      crowded.bytesRead <= SCALE_GOALS.rmBytesRatio * alone.bytesRead &&
      crowded.ms <= SCALE_GOALS.rmTimeRatio * alone.ms
    );
  });
  log(
    `scale: goals beside ${largest} VMs (rm reads ≤ ${SCALE_GOALS.rmBytesRatio}x the bytes, takes ≤ ${SCALE_GOALS.rmTimeRatio}x the time of rm alone): ${goalsMet ? 'met' : 'NOT met'}`,
  );
  return {
    bench: 'driver-scale',
    date: new Date().toISOString(),
    rounds,
    goRounds,
    sizes,
    warmUpMs,
    setUp,
    figures,
    goals: SCALE_GOALS,
    goalsMet,
  };
}

/**
 * One `scale:` line per figure: "scale: rm beside 2000 VMs: 180 ms (150–240), lag 3 ms (1–5),
 * 7 requests, 41 KB read (alone: …)": median (lowest–highest) of the rounds.
 */
export function formatScale(these: ScaleFigure[], all: ScaleFigure[]): string[] {
  const kb = (b: number): string => `${Math.round(b / 1024)} KB`;
  const show = (f: ScaleFigure): string =>
    `${showMs(f.samples.map((x) => x.ms))}, lag ${showMs(f.samples.map((x) => x.lagMs))}, ${f.requests} requests, ${kb(f.bytesRead)} read`;
  const parts = (f: ScaleFigure): string =>
    f.split
      ? `; of it ${Math.round(f.split.untilDeleteMs)} ms to the DELETE, ${Math.round(f.split.deletionMs)} ms the sandbox deleting the VM, ${Math.round(f.split.afterMs)} ms after`
      : '';
  const lines = these.map((f) => {
    const who = f.driver === 'ours' ? '' : 'Go pattern ';
    if (f.otherVms === 0) return `scale: ${who}${f.operation} alone: ${show(f)}${parts(f)}`;
    const alone = all.find((a) => a.driver === f.driver && a.operation === f.operation && a.otherVms === 0);
    return `scale: ${who}${f.operation} beside ${f.otherVms} VMs: ${show(f)} (alone: ${alone ? show(alone) : '?'})${parts(f)}`;
  });
  // Lag against lag: the difference that is the driver's; the rest of the totals' difference
  // is the sandbox's variance and the requests each pattern makes.
  for (const f of these.filter((x) => x.driver === 'ours')) {
    const go = these.find((g) => g.driver === 'go-pattern' && g.operation === f.operation);
    if (!go) continue;
    lines.push(
      `scale: ${f.operation} ${f.otherVms ? `beside ${f.otherVms} VMs` : 'alone'}, Go pattern − ours: lag ${Math.round(go.lagMs - f.lagMs)} ms (the driver's), ` +
        `until the condition ${Math.round(go.spread.conditionMs.median - f.spread.conditionMs.median)} ms (the sandbox's, and the requests before it), ` +
        `total ${Math.round(go.ms - f.ms)} ms (medians; until the condition: ours ${showMs(f.samples.map((x) => x.conditionMs))}, Go ${showMs(go.samples.map((x) => x.conditionMs))})`,
    );
  }
  return lines;
}

function option(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const sizes = option('sizes')?.split(',').map(Number);
  runDriverScaleBench({
    rounds: Number(option('rounds') ?? 3),
    ...(sizes ? { sizes } : {}),
    ...(option('go-rounds') ? { goRounds: Number(option('go-rounds')) } : {}),
  }).catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
