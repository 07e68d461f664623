// Benchmark (not a test): a whole-cluster deletion of 200 machines on the real Cluster API
// manager (sandbox/capi, run as Rancher's chart runs it), with the cleanup controller gating
// every Machine and Rancher's own controllers played by the stand-in (rm jobs doing nothing):
// the time from the Cluster's deletion to the last VM annotated against the time the cascade
// takes to reach the last Machine, machines released per second, and where each machine waits
// (bench/support/deletion-timeline.ts). Passes when every VM was annotated within 1 s of the
// cascade reaching its Machine and every machine is gone within the deadline.
// Baseline in the same run: Rancher 2.11's handler simulated with the same client (one
// HarvesterMachine after the other: read the clusters and the credential, GET the VM, full
// Update) on 200 more machines, whose objects are written directly (no Cluster API: the
// handler reads nothing Cluster API makes).
// Run: npx tsc -p . && node dist/bench/cleanup-controller.js [machines=200] [concurrency=rancher|N] [capiQps]
import { ANNOTATION_REMOVE_ALL_PVCS } from '../src/harvester/labels.js';
import { KubeClient } from '../src/kube/client.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { silentLogger } from '../src/log/logger.js';
import { CleanupController } from '../src/controller/controller.js';
import { hookAnnotation } from '../src/controller/constants.js';
import { rancherInstanceName } from '../src/rancher/names.js';
import { createTokenUser, tokenKubeconfig } from '../sandbox/control-plane/access.js';
import { describeClusterApi, startRancherWithClusterApi } from '../sandbox/capi/index.js';
import { startControlPlane, type ControlPlane } from '../sandbox/control-plane/control-plane.js';
import { installCrds } from '../sandbox/crds/install.js';
import { startRancherStandIn } from '../sandbox/rancher/rancher-standin.js';
import { harvesterCloudCredential, saveHarvesterCloudCredential } from '../sandbox/rancher/credentials.js';
import { createGuestCluster, createMachineVm } from '../sandbox/rancher/guest-cluster.js';
import { DeletionTimeline, quantile, ratePerSecond } from './support/deletion-timeline.js';
import { capiCluster, harvesterMachine, inParallel, provisioningCluster } from './support/rancher-objects.js';

const MACHINES = Number(process.argv[2] ?? 200);
const CONCURRENCY =
  process.argv[3] === undefined || process.argv[3] === 'rancher' ? 'rancher' : Number(process.argv[3]);
/** Cluster API's client rate limit: its default (20/s) unless given. */
const CLIENT_QPS = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
const NS = 'fleet-bench';
const BASELINE_NS = 'fleet-baseline';
const VM_NS = 'bench';
const HOOK = 'harvester-machine-cleanup';
const DEADLINE_MS = 180_000;
/** Every VM annotated within this long of the cascade reaching its Machine. */
const ANNOTATE_WITHIN_MS = 1_000;
const CREDENTIAL = 'cattle-global-data:cc-bench';

const seconds = (ms: number | undefined): string => (ms === undefined ? '—' : `${(ms / 1000).toFixed(2)} s`);

async function credential(rancher: ControlPlane, harvester: ControlPlane): Promise<string> {
  const user = await createTokenUser(harvester.admin, {
    expiresAt: new Date(Date.now() + 86_400_000),
    rules: [
      {
        apiGroups: ['kubevirt.io'],
        resources: ['virtualmachines'],
        verbs: ['get', 'list', 'patch', 'update'],
      },
    ],
  });
  const kubeconfig = tokenKubeconfig({
    name: 'h',
    server: harvester.server,
    caPem: harvester.caPem,
    token: user.token,
  });
  await saveHarvesterCloudCredential(
    rancher.admin,
    harvesterCloudCredential({ name: 'cc-bench', kubeconfig, clusterId: 'c-m-bench' }),
  );
  return kubeconfig;
}

/** The baseline's machines: the objects Rancher's handler reads, written directly. */
async function baselineMachines(rancher: ControlPlane, harvester: ControlPlane): Promise<string[]> {
  const cluster = 'scale-00000';
  await rancher.admin.create(Resources.provisioningCluster, provisioningCluster(0, BASELINE_NS));
  await rancher.admin.create(Resources.capiCluster, capiCluster(0, BASELINE_NS));
  const names: string[] = [];
  await inParallel(
    Array.from({ length: MACHINES }, (_, i) => i),
    16,
    async (i) => {
      // Every machine of cluster 0 (harvesterMachine() names ten per cluster; the cluster label is what is read).
      const hm = harvesterMachine(i, BASELINE_NS);
      hm.metadata.labels = { ...hm.metadata.labels, 'cluster.x-k8s.io/cluster-name': cluster };
      // No owner (the garbage collector would delete it: its Machine does not exist), no finalizer.
      delete hm.metadata.finalizers;
      delete hm.metadata.ownerReferences;
      await rancher.admin.create(Resources.harvesterMachine, hm);
      await createMachineVm(harvester.admin, {
        instanceName: rancherInstanceName(hm.metadata.name),
        clusterName: cluster,
        vmNamespace: VM_NS,
      });
      names.push(hm.metadata.name);
    },
  );
  return names;
}

/** Rancher 2.11's harvestercleanup onChange, one object at a time, with the same client. */
async function rancherBaseline(
  rancher: KubeClient,
  harvester: KubeClient,
  machines: string[],
): Promise<number> {
  const started = performance.now();
  for (const name of machines) {
    await rancher.get(Resources.harvesterMachine, { namespace: BASELINE_NS, name });
    await rancher.get(Resources.capiCluster, { namespace: BASELINE_NS, name: 'scale-00000' });
    await rancher.get(Resources.provisioningCluster, { namespace: BASELINE_NS, name: 'scale-00000' });
    await rancher.get(Resources.secret, { namespace: 'cattle-global-data', name: 'cc-bench' });
    const vm = await harvester.get<KubeObject>(Resources.virtualMachine, {
      namespace: VM_NS,
      name: rancherInstanceName(name),
    });
    vm.metadata.annotations = { ...vm.metadata.annotations, [ANNOTATION_REMOVE_ALL_PVCS]: 'true' };
    await harvester.update(Resources.virtualMachine, vm);
  }
  return performance.now() - started;
}

async function deletion(rancher: ControlPlane, harvester: ControlPlane): Promise<boolean> {
  const standIn = await startRancherStandIn(rancher.admin, {
    namespace: NS,
    removalJob: () => Promise.resolve(),
    retryDelayMs: 100,
  });
  const controller = new CleanupController({
    client: rancher.admin,
    logger: silentLogger,
    config: {
      namespaces: [NS],
      credentialNamespace: 'cattle-global-data',
      hookName: HOOK,
      gateDeadlineMs: 600_000,
      probeIntervalMs: 600_000,
      expiringSoonMs: 7 * 86_400_000,
      statusConfigMap: { namespace: 'default', name: 'bench-status' },
      identity: 'bench',
    },
  });
  const timeline = new DeletionTimeline({
    rancher: rancher.admin,
    harvester: harvester.admin,
    namespace: NS,
    vmNamespace: VM_NS,
    cluster: 'bench-ours',
    hook: hookAnnotation(HOOK),
  });
  try {
    // The controller gates Machines as Cluster API makes them, as it would in Rancher.
    await controller.start();
    let t = performance.now();
    const machines = await createGuestCluster(rancher.admin, {
      namespace: NS,
      name: 'bench-ours',
      vmNamespace: VM_NS,
      clusterCredential: CREDENTIAL,
      pools: [{ name: 'wk', quantity: MACHINES }],
      downstreamKubeconfig: rancher.adminKubeconfig,
      timeoutMs: 900_000,
    });
    const made = performance.now() - t;
    await inParallel(machines, 16, (m) =>
      createMachineVm(harvester.admin, {
        instanceName: m.instanceName,
        clusterName: 'bench-ours',
        vmNamespace: VM_NS,
      }),
    );
    // Every machine is gated before the deletion starts.
    for (;;) {
      const list = await rancher.admin.list<KubeObject>(Resources.capiMachine, { namespace: NS });
      if (list.items.every((m) => m.metadata.annotations?.[hookAnnotation(HOOK)] !== undefined)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await controller.idle();
    console.log(
      `setup: ${MACHINES} machines made by Cluster API (concurrency ${CONCURRENCY}, client ${CLIENT_QPS ?? 20} requests/s) in ${seconds(made)}, with VMs and gates in ${seconds(performance.now() - t)}`,
    );
    await timeline.watch();
    timeline.start();
    t = performance.now();
    await rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name: 'bench-ours' });
    while (timeline.left() > 0 || timeline.times('gone').length < MACHINES) {
      if (performance.now() - t > DEADLINE_MS) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const left = MACHINES - timeline.times('gone').length;
    const deleting = timeline.times('deleting');
    const annotated = timeline.times('annotated');
    const released = timeline.times('released');
    const gone = timeline.times('gone');
    const lag = timeline.gaps('deleting', 'annotated');
    const late = lag.filter((ms) => ms > ANNOTATE_WITHIN_MS).length;
    const ok = left === 0 && annotated.length === MACHINES && late === 0;
    for (const line of timeline.report()) console.log(line);
    console.log(
      `scale: ${MACHINES}-machine cluster deletion on the real Cluster API: last VM annotated ${seconds(annotated.at(-1))} after the Cluster's deletion, the cascade reached the last Machine after ${seconds(deleting.at(-1))}; each VM annotated ${seconds(quantile(lag, 0.5))} (median), ${seconds(lag.at(-1))} (max) after the cascade reached its Machine; ${ratePerSecond(released).toFixed(1)} machines released/s; every machine gone after ${seconds(gone.at(-1))}${ok ? '' : ` — FAILED: ${left} machines left after ${DEADLINE_MS / 1000} s, ${MACHINES - annotated.length} VMs not annotated, ${late} annotated later than ${ANNOTATE_WITHIN_MS} ms`}`,
    );
    return ok;
  } finally {
    await timeline.stop();
    await controller.stop();
    await standIn.stop();
  }
}

async function main(): Promise<void> {
  const [withCapi, harvester] = await Promise.all([
    startRancherWithClusterApi({
      clusterApi: {
        namespace: NS,
        concurrency: CONCURRENCY,
        ...(CLIENT_QPS ? { clientQps: CLIENT_QPS } : {}),
      },
    }),
    startControlPlane({ name: 'harvester', controllerManager: false }),
  ]);
  const { rancher } = withCapi;
  console.log(describeClusterApi(withCapi.clusterApi));
  try {
    await installCrds(harvester.admin, 'harvester');
    for (const ns of [NS, BASELINE_NS])
      await rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns },
      });
    await harvester.admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: VM_NS },
    });
    const kubeconfig = await credential(rancher, harvester);
    const ok = await deletion(rancher, harvester);
    let t = performance.now();
    const theirs = await baselineMachines(rancher, harvester);
    console.log(
      `setup: ${MACHINES} baseline machines and VMs written directly in ${seconds(performance.now() - t)}`,
    );
    const vmClient = KubeClient.fromKubeconfig(kubeconfig);
    try {
      t = await rancherBaseline(rancher.admin, vmClient, theirs);
      console.log(
        `baseline (Rancher 2.11 handler, sequential GET + full Update, same client): ${MACHINES} VMs in ${seconds(t)}`,
      );
    } finally {
      vmClient.close();
    }
    if (!ok) process.exitCode = 1;
  } finally {
    await Promise.all([withCapi.stop(), harvester.stop()]);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
