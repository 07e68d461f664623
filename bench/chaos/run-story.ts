// One run of the chaos story, the walkthrough's two stories on a fresh guest cluster: Rancher
// provisions a 3-machine cluster (Cluster API makes the Machines, our driver creates the VMs
// through the Harvester-side proxy), the CSI stand-in hot-plugs a workload volume into each VM;
// the user deletes one worker (a scale-down: its workload volume must stay), then the whole
// cluster (every volume of it must go). Faults fire at random points of all three phases.
// What is counted is what a user sees: volumes kept or gone, VMs, gates on Machines.
import { keyText, parseKey } from '../../src/api/object-key.js';
import { hookAnnotation, DEFAULT_HOOK_NAME } from '../../src/controller/constants.js';
import { ANNOTATION_VOLUME_CLAIM_TEMPLATES, LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import { Informer } from '../../src/kube/informer.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { silentLogger } from '../../src/log/logger.js';
import { RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE } from '../../src/rancher/labels.js';
import { CLOUD_CREDENTIAL_NAMESPACE } from '../../src/rancher/cloud-credential.js';
import { createGuestCluster, scaleDownPool, type GuestMachine } from '../../sandbox/rancher/guest-cluster.js';
import { FaultRun, planFaults, type FiredFault, type Phase, type PlannedFault } from './faults.js';
import { NS, VM_NS, type ChaosWorld } from './world.js';

const HOOK = hookAnnotation(DEFAULT_HOOK_NAME);
const DAY = 86_400_000;
/** How long a deletion (scale-down or the whole cluster) may take before its run counts as stuck. */
const DELETION_BOUND_MS = 240_000;
/** After the cluster is gone, its volumes' own deletion (finalizers) may take this long. */
const VOLUME_BOUND_MS = 60_000;
const POOLS = [
  { name: 'cp', quantity: 1 },
  { name: 'wk', quantity: 2 },
];
const MACHINES = POOLS.reduce((n, p) => n + p.quantity, 0);

export interface RunResult {
  run: number;
  cluster: string;
  plan: PlannedFault[];
  fired: FiredFault[];
  wallMs: number;
  /** Volumes that had to stay (the scaled-down worker's, the bystander's) and were deleted. */
  volumesLost: string[];
  /** Volumes of the deleted cluster still there after the bound. */
  volumesLeaked: string[];
  /** Machines whose gate was still held past the gate deadline (+ grace). */
  gatesPastDeadline: string[];
  /** The longest any gate of this run was held (ms from the Machine's deletion). */
  longestGateMs: number;
  /** A VM name seen with more than one UID, or more VMs than machines. */
  duplicateVms: string[];
  /** VMs of the deleted cluster left on Harvester. */
  vmsLeft: string[];
  /** A phase that did not finish within its bound (the run's figures then say what was left). */
  stuck: string[];
  /**
   * Create jobs that failed under the faults ("machine: error"). Rancher does not rerun a
   * failed create Job, so such a cluster never becomes Running: the run then deletes the
   * whole cluster at once, as an operator would, and every must-be-0 figure still applies.
   */
  createsFailed: string[];
  phaseMs: Partial<Record<Phase, number>>;
}

export interface Bystander {
  /** PVC name → UID: must be the same objects at the end of every run. */
  pvcs: Map<string, string>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function pvcUids(world: ChaosWorld): Promise<Map<string, string>> {
  const list = await world.harvester.list<KubeObject>(Resources.pvc, { namespace: VM_NS });
  return new Map(
    list.items
      .filter((p) => !p.metadata.deletionTimestamp)
      .map((p) => [p.metadata.name, p.metadata.uid ?? ''] as const),
  );
}

/** Retries a read or write of the runner itself while an apiserver restarts under it. */
async function persist<T>(fn: () => Promise<T>, forMs = 60_000): Promise<T> {
  const deadline = Date.now() + forMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(1_000);
    }
  }
}

/** Watches the gates of deleting Machines every second: how long each is held. */
class GateWatch {
  readonly held = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  constructor(
    private readonly world: ChaosWorld,
    private readonly cluster: string,
  ) {}
  start(): void {
    this.timer = setInterval(() => {
      void this.world.rancher
        .list<KubeObject>(Resources.capiMachine, { namespace: NS })
        .then((list) => {
          for (const m of list.items) {
            const deleted = Date.parse(m.metadata.deletionTimestamp ?? '');
            if (!Number.isFinite(deleted) || !m.metadata.annotations?.[HOOK]) continue;
            if (m.metadata.labels?.['cluster.x-k8s.io/cluster-name'] !== this.cluster) continue;
            const name = m.metadata.name;
            this.held.set(name, Math.max(this.held.get(name) ?? 0, Date.now() - deleted));
          }
        })
        .catch(() => undefined); // an apiserver restarting: the next tick reads again
    }, 1_000);
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

export async function runStory(
  world: ChaosWorld,
  opts: { run: number; rng: () => number; bystander: Bystander; gateDeadlineMs: number; graceMs: number },
  say: (line: string) => void,
): Promise<RunResult> {
  const t0 = Date.now();
  const cluster = `chaos-${opts.run}`;
  const plan = planFaults(opts.rng);
  const result: RunResult = {
    run: opts.run,
    cluster,
    plan,
    fired: [],
    wallMs: 0,
    volumesLost: [],
    volumesLeaked: [],
    gatesPastDeadline: [],
    longestGateMs: 0,
    duplicateVms: [],
    vmsLeft: [],
    stuck: [],
    createsFailed: [],
    phaseMs: {},
  };
  say(
    `run ${opts.run}: planned ${plan.map((f) => `${f.kind}${f.kind === 'apiserver-restart' || f.kind === 'proxy-stall' ? `(${f.target})` : ''} in ${f.phase} +${(f.offsetMs / 1000).toFixed(1)} s`).join(', ')}`,
  );

  const token = await world.sandbox.newRancherToken({ ttlMs: DAY });
  const credential = { name: `cc-chaos-${opts.run}`, token };
  await world.saveCredential(credential.name, token);
  const faults = new FaultRun(world, plan, credential, t0);

  // Every VM UID seen per name: a create retried into a second VM shows as a second UID.
  const uids = new Map<string, Set<string>>();
  const vms = new Informer<KubeObject>(world.harvester, Resources.virtualMachine, {
    namespace: VM_NS,
    labelSelector: `${LABEL_GUEST_CLUSTER_NAME}=${cluster}`,
    logger: silentLogger,
  }).on((e) => {
    const name = e.object.metadata.name;
    const set = uids.get(name) ?? new Set<string>();
    set.add(e.object.metadata.uid ?? '');
    uids.set(name, set);
  });
  await vms.start();
  const gates = new GateWatch(world, cluster);
  gates.start();

  let machines: GuestMachine[] = [];
  const workloadOf = new Map<string, string>(); // machine → its hot-plugged PVC
  const mustStay = new Map<string, string>(); // PVC name → UID
  const mustGo = new Set<string>();
  let deleted = false;
  let createFailed = false;
  // The stand-in records every job run; this cluster's machines are named `<cluster>-<pool>-…`.
  const failedCreates = (): string[] =>
    world.standIn.runs
      .filter(
        (r) => r.kind === 'create' && r.ok === false && r.machine.startsWith(keyText(NS, `${cluster}-`)),
      )
      .map((r) => `${parseKey(r.machine).name}: ${r.error ?? 'unknown error'}`);
  const phase = async (name: Phase, fn: () => Promise<void>): Promise<void> => {
    const start = Date.now();
    faults.enter(name);
    await fn();
    result.phaseMs[name] = Date.now() - start;
  };
  try {
    await phase('create', async () => {
      const failed = new AbortController();
      const watch = setInterval(() => {
        if (failedCreates().length > 0) failed.abort(new Error('a create job failed'));
      }, 500);
      try {
        machines = await createGuestCluster(world.rancher, {
          namespace: NS,
          name: cluster,
          clusterCredential: `${CLOUD_CREDENTIAL_NAMESPACE}:${credential.name}`,
          pools: POOLS,
          vmNamespace: VM_NS,
          downstreamKubeconfig: world.sandbox.rancher.adminKubeconfig,
          timeoutMs: DELETION_BOUND_MS,
          signal: failed.signal,
        });
      } catch (err) {
        if (!failed.signal.aborted) throw err;
        createFailed = true;
        return;
      } finally {
        clearInterval(watch);
      }
      for (const m of machines) {
        const vm = await persist(() =>
          world.harvester.get<KubeObject>(Resources.virtualMachine, {
            namespace: VM_NS,
            name: m.instanceName,
          }),
        );
        const templates = JSON.parse(
          vm.metadata.annotations?.[ANNOTATION_VOLUME_CLAIM_TEMPLATES] ?? '[]',
        ) as Array<{ metadata: { name: string } }>;
        for (const t of templates) mustGo.add(t.metadata.name);
        const pvcName = await persist(() =>
          world.sandbox.standIns.csi.createVolume({ namespace: VM_NS, size: '1Gi' }),
        );
        await persist(() =>
          world.sandbox.standIns.csi.hotplug({ namespace: VM_NS, vmName: m.instanceName, pvcName }),
        );
        mustGo.add(pvcName);
        workloadOf.set(m.name, pvcName);
      }
      await world.sandbox.standIns.idle();
    });

    const victim = machines.find((m) => m.pool === 'wk') as GuestMachine;
    if (!createFailed)
      await phase('scale-down', async () => {
        // The victim's hot-plugged volume is a workload's: a scale-down must keep it.
        const workload = workloadOf.get(victim.name) ?? '';
        const live = await persist(() => pvcUids(world));
        mustStay.set(workload, live.get(workload) ?? '');
        mustGo.delete(workload);
        await persist(() =>
          scaleDownPool(world.rancher, { namespace: NS, cluster, pool: 'wk', machine: victim.name }),
        );
        try {
          await waitFor(world.rancher, {
            type: Resources.capiMachine,
            namespace: NS,
            name: victim.name,
            timeoutMs: DELETION_BOUND_MS,
            description: `the scaled-down Machine ${victim.name} to go`,
            until: (o) => o === undefined,
          });
        } catch (err) {
          result.stuck.push(`scale-down: ${err instanceof Error ? err.message : String(err)}`);
        }
      });

    await phase('delete', async () => {
      await persist(() =>
        world.rancher.delete(Resources.provisioningCluster, { namespace: NS, name: cluster }),
      );
      try {
        await waitFor(world.rancher, {
          type: Resources.provisioningCluster,
          namespace: NS,
          name: cluster,
          timeoutMs: DELETION_BOUND_MS,
          description: `cluster ${cluster} to be deleted`,
          until: (o) => o === undefined,
        });
        deleted = true;
      } catch (err) {
        result.stuck.push(`delete: ${err instanceof Error ? err.message : String(err)}`);
      }
    });
  } catch (err) {
    result.stuck.push(`story: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    faults.cancelPending();
    await faults.settled();
    result.fired = faults.fired;
    gates.stop();
  }

  // Figures, once every fault is over. Left to go: the volumes known to belong to the cluster,
  // and any other named after one of its VMs (a create that failed after making its VM).
  result.createsFailed = failedCreates();
  const leftToGo = async (): Promise<string[]> => {
    const live = await persist(() => pvcUids(world));
    const ours = [...live.keys()].filter((p) => p.startsWith(`${cluster}-`) && !mustStay.has(p));
    return [...new Set([...mustGo, ...ours])].filter((p) => live.has(p));
  };
  const bound = Date.now() + VOLUME_BOUND_MS;
  let left = await leftToGo();
  while (deleted && left.length > 0 && Date.now() < bound) {
    await sleep(500);
    left = await leftToGo();
  }
  result.volumesLeaked = left;
  const live = await persist(() => pvcUids(world));
  for (const [pvc, uid] of [...mustStay, ...opts.bystander.pvcs])
    if (live.get(pvc) !== uid) result.volumesLost.push(pvc);
  for (const [name, set] of uids) if (set.size > 1) result.duplicateVms.push(`${name} (${set.size} UIDs)`);
  if (uids.size > MACHINES) result.duplicateVms.push(`${uids.size} VMs for ${MACHINES} machines`);
  result.vmsLeft = vms.list().map((v) => v.metadata.name);
  await vms.stop();
  for (const [machine, ms] of gates.held) {
    result.longestGateMs = Math.max(result.longestGateMs, ms);
    if (ms > opts.gateDeadlineMs + opts.graceMs) result.gatesPastDeadline.push(machine);
  }

  // Leave nothing for the next run: the kept volume, and a cluster that did not go.
  for (const pvc of mustStay.keys())
    await persist(() => world.harvester.delete(Resources.pvc, { namespace: VM_NS, name: pvc })).catch(
      () => undefined,
    );
  if (!deleted) await forceAway(world, cluster);
  result.wallMs = Date.now() - t0;
  return result;
}

/** Rancher's escape hatch for a run that got stuck, so the next run starts clean. */
async function forceAway(world: ChaosWorld, cluster: string): Promise<void> {
  const hms = await world.rancher.list<KubeObject>(Resources.harvesterMachine, { namespace: NS });
  for (const hm of hms.items.filter((h) => h.metadata.labels?.['cluster.x-k8s.io/cluster-name'] === cluster))
    await world.rancher
      .patch(
        Resources.harvesterMachine,
        { namespace: NS, name: hm.metadata.name },
        { metadata: { annotations: { [RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE]: 'true' } } },
      )
      .catch(() => undefined);
  await world.rancher
    .delete(Resources.provisioningCluster, { namespace: NS, name: cluster })
    .catch(() => undefined);
}
