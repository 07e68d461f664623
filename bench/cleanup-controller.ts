// Benchmark (not a test) of the cleanup controller on real control planes:
//  1. Time to annotate every VM of a deleted 200-machine cluster (target < 10 s), with the
//     controller and the real Cluster API manager (Rancher's own controllers played by the
//     stand-in, rm jobs doing nothing); baseline in the same run: Rancher 2.11's handler
//     simulated with the same client (one HarvesterMachine after the other: read the
//     clusters and the credential, GET the VM, full Update).
//  2. The controller's RSS with 5,000 HarvesterMachines cached (target < 200 MB), measured
//     on main.ts in a child process; baseline: the same process with none cached.
// Run: npx tsc -p . && node dist/bench/cleanup-controller.js [machines=200] [cached=5000]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../src/harvester/labels.js';
import { KubeClient } from '../src/kube/client.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { silentLogger } from '../src/log/logger.js';
import { CleanupController } from '../src/controller/controller.js';
import { createTokenUser, tokenKubeconfig } from '../sandbox/control-plane/access.js';
import { describeClusterApi, startRancherWithClusterApi } from '../sandbox/capi/index.js';
import { startControlPlane, type ControlPlane } from '../sandbox/control-plane/control-plane.js';
import { installCrds } from '../sandbox/crds/install.js';
import { startRancherStandIn } from '../sandbox/rancher/rancher-standin.js';
import { harvesterCloudCredential, saveHarvesterCloudCredential } from '../sandbox/rancher/credentials.js';
import { createGuestCluster, createMachineVm, type GuestMachine } from '../sandbox/rancher/guest-cluster.js';

const MACHINES = Number(process.argv[2] ?? 200);
const CACHED = Number(process.argv[3] ?? 5000);
const NS = 'fleet-bench';
const VM_NS = 'bench';

async function inParallel<T>(items: T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

async function countAnnotated(harvester: KubeClient, cluster: string): Promise<number> {
  const list = await harvester.list<KubeObject>(Resources.virtualMachine, {
    namespace: VM_NS,
    labelSelector: `guestcluster.harvesterhci.io/name=${cluster}`,
  });
  return list.items.filter((v) => v.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS] === 'true').length;
}

async function guestWithVms(
  rancher: ControlPlane,
  harvester: ControlPlane,
  name: string,
  n: number,
): Promise<GuestMachine[]> {
  const machines = await createGuestCluster(rancher.admin, {
    namespace: NS,
    name,
    vmNamespace: VM_NS,
    clusterCredential: 'cattle-global-data:cc-bench',
    pools: [{ name: 'wk', quantity: n }],
    downstreamKubeconfig: rancher.adminKubeconfig,
    timeoutMs: 900_000,
  });
  await inParallel(machines, 16, (m) =>
    createMachineVm(harvester.admin, { instanceName: m.instanceName, clusterName: name, vmNamespace: VM_NS }),
  );
  return machines;
}

/** Rancher 2.11's harvestercleanup onChange, one object at a time, with the same client. */
async function rancherBaseline(
  rancher: KubeClient,
  harvester: KubeClient,
  machines: GuestMachine[],
  cluster: string,
): Promise<number> {
  const started = performance.now();
  for (const m of machines) {
    await rancher.get(Resources.harvesterMachine, { namespace: NS, name: m.name });
    await rancher.get(Resources.capiCluster, { namespace: NS, name: cluster });
    await rancher.get(Resources.provisioningCluster, { namespace: NS, name: cluster });
    await rancher.get(Resources.secret, { namespace: 'cattle-global-data', name: 'cc-bench' });
    const vm = await harvester.get<KubeObject>(Resources.virtualMachine, {
      namespace: VM_NS,
      name: m.instanceName,
    });
    vm.metadata.annotations = { ...vm.metadata.annotations, [ANNOTATION_REMOVE_ALL_PVCS]: 'true' };
    await harvester.update(Resources.virtualMachine, vm);
  }
  return performance.now() - started;
}

async function annotationBenchmark(rancher: ControlPlane, harvester: ControlPlane): Promise<void> {
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
  const standIn = await startRancherStandIn(rancher.admin, {
    namespace: NS,
    removalJob: () => Promise.resolve(),
    retryDelayMs: 100,
  });
  let t = performance.now();
  await guestWithVms(rancher, harvester, 'bench-ours', MACHINES);
  const theirs = await guestWithVms(rancher, harvester, 'bench-rancher', MACHINES);
  console.log(
    `setup: 2 clusters x ${MACHINES} machines (made by Cluster API) with VMs in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  const controller = new CleanupController({
    client: rancher.admin,
    logger: silentLogger,
    config: {
      namespaces: [NS],
      credentialNamespace: 'cattle-global-data',
      hookName: 'harvester-machine-cleanup',
      gateDeadlineMs: 600_000,
      probeIntervalMs: 600_000,
      expiringSoonMs: 7 * 86_400_000,
      statusConfigMap: { namespace: 'default', name: 'bench-status' },
      identity: 'bench',
    },
  });
  try {
    await controller.start();
    await controller.idle();
    // Every machine is gated before the deletion starts.
    for (;;) {
      const list = await rancher.admin.list<KubeObject>(Resources.capiMachine, { namespace: NS });
      if (
        list.items.every((m) =>
          Object.keys(m.metadata.annotations ?? {}).some((k) => k.startsWith('pre-terminate.')),
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 200));
    }
    t = performance.now();
    await rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name: 'bench-ours' });
    let annotatedAt = 0;
    let allDeletingAt = 0;
    let firstAnnotatedAt = 0;
    for (;;) {
      const annotated = annotatedAt ? MACHINES : await countAnnotated(harvester.admin, 'bench-ours');
      if (annotated > 0 && !firstAnnotatedAt) firstAnnotatedAt = performance.now() - t;
      if (!annotatedAt && annotated === MACHINES) annotatedAt = performance.now() - t;
      const machines = (
        await rancher.admin.list<KubeObject>(Resources.capiMachine, {
          namespace: NS,
          labelSelector: 'cluster.x-k8s.io/cluster-name=bench-ours',
        })
      ).items;
      if (!allDeletingAt && machines.every((m) => m.metadata.deletionTimestamp))
        allDeletingAt = performance.now() - t;
      const left = machines.length;
      if (annotatedAt && left === 0) break;
      if (performance.now() - t > 120_000) throw new Error(`timed out: ${left} machines left`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const releasedAt = performance.now() - t;
    console.log(
      `  (every Machine marked deleted by Cluster API's cascade after ${(allDeletingAt / 1000).toFixed(2)} s; first VM annotated after ${(firstAnnotatedAt / 1000).toFixed(2)} s)`,
    );
    console.log(
      `controller: all ${MACHINES} VMs annotated ${(annotatedAt / 1000).toFixed(2)} s after the cluster deletion (target < 10 s); every machine removed after ${(releasedAt / 1000).toFixed(2)} s`,
    );
  } finally {
    await controller.stop();
    await standIn.stop();
  }
  const vmClient = KubeClient.fromKubeconfig(kubeconfig);
  try {
    const baseline = await rancherBaseline(rancher.admin, vmClient, theirs, 'bench-rancher');
    console.log(
      `baseline (Rancher 2.11 handler, sequential GET + full Update, same client): ${MACHINES} VMs in ${(baseline / 1000).toFixed(2)} s`,
    );
  } finally {
    vmClient.close();
  }
}

async function rssBenchmark(rancher: ControlPlane): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-bench-'));
  const kubeconfigPath = path.join(dir, 'kubeconfig');
  fs.writeFileSync(kubeconfigPath, rancher.adminKubeconfig, { mode: 0o600 });
  const measure = async (namespace: string): Promise<number> => {
    let logged = '';
    const child = spawn(
      process.execPath,
      [
        fileURLToPath(new URL('../src/controller/main.js', import.meta.url)),
        '--kubeconfig',
        kubeconfigPath,
        '--namespace',
        namespace,
        '--leader-elect',
        'false',
        '--metrics-bind-address',
        '127.0.0.1:0',
        '--log-level',
        'info',
        '--leader-election-namespace',
        'default',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (c: Buffer) => {
          logged += c.toString();
          if (logged.includes('"caches synced"')) resolve();
        });
        child.once('exit', (code) => reject(new Error(`controller exited (${code})`)));
      });
      await new Promise((r) => setTimeout(r, 3000));
      const synced = /"caches synced".*?"heapUsedMb":(\d+)/.exec(logged)?.[1];
      if (synced) console.log(`  (${namespace}: V8 heap used when synced ${synced} MB)`);
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  };
  try {
    for (const ns of ['bench-empty', 'bench-rss'])
      await rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns },
      });
    const empty = await measure('bench-empty');
    const t = performance.now();
    const userData = `#cloud-config\npackage_update: true\npackages: [qemu-guest-agent]\nruncmd:\n${'  - [systemctl, enable, --now, qemu-guest-agent.service]\n'.repeat(30)}`;
    await inParallel(
      Array.from({ length: CACHED }, (_, i) => i),
      16,
      (i) =>
        rancher.admin.create<KubeObject>(Resources.harvesterMachine, {
          apiVersion: 'rke-machine.cattle.io/v1',
          kind: 'HarvesterMachine',
          metadata: {
            name: `rss-${String(i).padStart(5, '0')}-pool1-7f8d9c5b6-x2v9q`,
            namespace: 'bench-rss',
            labels: {
              'cluster.x-k8s.io/cluster-name': `rss-${i % 50}`,
              'rke.cattle.io/rke-machine-pool-name': 'pool1',
              'cluster.x-k8s.io/deployment-name': `rss-${i % 50}-pool1`,
            },
          },
          spec: {
            vmNamespace: 'default',
            cpuCount: '4',
            memorySize: '8',
            diskInfo: JSON.stringify({
              disks: [{ imageName: 'default/image-ubuntu', size: 40, bootOrder: 1 }],
            }),
            networkInfo: JSON.stringify({ interfaces: [{ networkName: 'default/vlan1' }] }),
            sshUser: 'ubuntu',
            userData,
            common: { cloudCredentialSecretName: 'cattle-global-data:cc-bench' },
          },
        } as KubeObject),
    );
    console.log(
      `created ${CACHED} HarvesterMachines (~${Math.round(JSON.stringify(userData).length / 1024 + 1)} KiB each) in ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );
    const full = await measure('bench-rss');
    console.log(
      `controller RSS: ${full.toFixed(0)} MB with ${CACHED} HarvesterMachines cached (target < 200 MB); baseline ${empty.toFixed(0)} MB with none`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const [withCapi, harvester] = await Promise.all([
    startRancherWithClusterApi({ clusterApi: { namespace: NS } }),
    startControlPlane({ name: 'harvester', controllerManager: false }),
  ]);
  const { rancher } = withCapi;
  console.log(describeClusterApi(withCapi.clusterApi));
  try {
    await installCrds(harvester.admin, 'harvester');
    for (const ns of [NS])
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
    await annotationBenchmark(rancher, harvester);
    await rssBenchmark(rancher);
  } finally {
    await Promise.all([withCapi.stop(), harvester.stop()]);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
