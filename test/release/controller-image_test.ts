// The released controller image run as the chart's Deployment would run it: `podman load` of
// the OCI archive, `podman run` with the rendered Deployment's env, args, user and security
// context (read-only root, capabilities dropped, /tmp its emptyDir), the ServiceAccount's
// TokenRequest token, CA and namespace at the in-cluster path, KUBERNETES_SERVICE_HOST/PORT
// at the sandbox's Rancher apiserver on 127.0.0.1 (host network). Then a guest cluster is
// deleted through the sandbox's Rancher stand-ins with the real driver's Remove as the rm
// job: every VM must carry the whole-cluster annotation when its job starts, and every hook
// must be released. Last, the rendered pre-delete Job runs the same way and removes every
// hook, and the controller, its Lease taken, stops.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ANNOTATION_REMOVE_ALL_PVCS, LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import { hookAnnotation, Reasons } from '../../src/controller/constants.js';
import { rancherInstanceName } from '../../src/controller/rancher-names.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { freePort } from '../../sandbox/control-plane/ports.js';
import { serviceAccountToken } from '../../sandbox/control-plane/service-account-token.js';
import { startCapiStandIn, type CapiStandIn } from '../../sandbox/rancher/capi-standin.js';
import {
  createGuestCluster,
  createMachineVm,
  type GuestMachine,
} from '../../sandbox/rancher/guest-cluster.js';
import { driverRemovalJob } from '../../sandbox/rancher/removal-job.js';
import { releaseArtifacts, type ReleaseArtifacts } from '../../sandbox/release/artifacts.js';
import { applyServerSide, renderChart } from '../../sandbox/release/helm.js';
import { loadImage, runAsPod, type PodSpec, type RunningContainer } from '../../sandbox/release/podman.js';
import { recordOutput } from '../../sandbox/secret-ledger.js';
import { startSandbox, type Sandbox } from '../../sandbox/sandbox.js';
import { eventually } from '../support/eventually.js';

const NS = 'fleet-image';
const SYSTEM_NS = 'hm-image';
const VM_NS = 'default';
const RELEASE = 'hmc';
const HOOK = hookAnnotation('harvester-machine-cleanup');

interface Workload extends KubeObject {
  spec: { template: { spec: PodSpec & { containers: Array<{ image: string }> } } };
}

let sandbox: Sandbox | undefined;
let standIn: CapiStandIn | undefined;
let controller: RunningContainer | undefined;
let metricsPort = 0;
let artifacts: ReleaseArtifacts;
let imageId = '';
let job: Workload;
const observations: Array<{ machine: string; annotation: string | undefined }> = [];

const sbx = (): Sandbox => {
  if (!sandbox) throw new Error('the sandbox is not started');
  return sandbox;
};
const apiserver = (): { host: string; port: number } => {
  const url = new URL(sbx().rancher.server);
  return { host: url.hostname, port: Number(url.port) };
};
async function serviceAccount(): Promise<{ token: string; caPem: string; namespace: string }> {
  const token = await serviceAccountToken(sbx().rancher.admin, { namespace: SYSTEM_NS, name: RELEASE });
  return { token, caPem: sbx().rancher.caPem, namespace: SYSTEM_NS };
}

before(async () => {
  artifacts = await releaseArtifacts();
  const [id, started] = await Promise.all([
    loadImage(artifacts.image),
    startSandbox({ standIns: { delays: { guestAgentMs: 100, shutdownMs: 50 } } }),
  ]);
  imageId = id;
  sandbox = started;
  const { rancher } = sandbox;
  for (const name of [NS, SYSTEM_NS])
    await rancher.admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name },
    });
  const objects = await renderChart(artifacts.chart, {
    release: RELEASE,
    namespace: SYSTEM_NS,
    values: { watchNamespaces: [NS], probeInterval: '1m' },
  });
  await applyServerSide(rancher.admin, objects);
  const deployment = objects.find((o) => o.kind === 'Deployment') as Workload;
  job = objects.find((o) => o.kind === 'Job') as Workload;
  assert.equal(
    deployment.spec.template.spec.containers[0]?.image,
    `harvester-machine/controller:${artifacts.version}`,
  );

  // Rancher's rm job: looks at the VM as it is when the job starts, then the driver's Remove.
  const remove = driverRemovalJob(rancher.admin);
  standIn = await startCapiStandIn(rancher.admin, {
    namespace: NS,
    retryDelayMs: 500,
    removalJob: async (ctx) => {
      const name = ctx.harvesterMachine.metadata.name ?? '';
      const vm = await sbx().harvester.admin.find<KubeObject>(Resources.virtualMachine, {
        namespace: VM_NS,
        name: rancherInstanceName(name),
      });
      observations.push({
        machine: name,
        annotation: vm?.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS],
      });
      await remove(ctx);
    },
  });

  metricsPort = await freePort();
  controller = runAsPod({
    imageId,
    pod: deployment.spec.template.spec,
    podMeta: { name: `${RELEASE}-7d9f8b6c5-x2v9q`, namespace: SYSTEM_NS },
    serviceAccount: await serviceAccount(),
    apiserver: apiserver(),
    // The Deployment binds 0.0.0.0 for the kubelet's probes; on the host network here, loopback.
    envOverrides: { METRICS_BIND_ADDRESS: `127.0.0.1:${metricsPort}` },
  });
  await eventually(
    'the containerized controller to lead and be ready',
    async () =>
      controller?.output().includes('became leader') === true &&
      (await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined))?.status === 200,
    90_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\npodman ${controller?.argv.join(' ')}\n${controller?.output()}`);
  });
});
after(async () => {
  await controller?.stop();
  if (controller) recordOutput('controller container', controller.output());
  await standIn?.stop();
  await sandbox?.stop();
});

async function guestCluster(name: string, quantity: number): Promise<GuestMachine[]> {
  const s = sbx();
  const image = await s.harvester.admin.get<KubeObject & { status?: { storageClassName?: string } }>(
    Resources.virtualMachineImage,
    { namespace: VM_NS, name: s.seeds.image },
  );
  const imageStorageClass = image.status?.storageClassName;
  const machines = await createGuestCluster(
    s.rancher.admin,
    {
      name,
      namespace: NS,
      vmNamespace: VM_NS,
      clusterCredential: `${s.cloudCredential.namespace}:${s.cloudCredential.name}`,
      pools: [{ name: 'wk', quantity }],
    },
    s.kubeconfigs.harvesterViaRancher,
  );
  for (const m of machines)
    await createMachineVm(s.harvester.admin, {
      instanceName: m.instanceName,
      clusterName: name,
      vmNamespace: VM_NS,
      image: `${VM_NS}/${s.seeds.image}`,
      ...(imageStorageClass ? { imageStorageClass } : {}),
    });
  return machines;
}

const machineAnnotations = async (name: string): Promise<Record<string, string>> =>
  (await sbx().rancher.admin.get<KubeObject>(Resources.capiMachine, { namespace: NS, name })).metadata
    .annotations ?? {};

async function waitHooks(machines: GuestMachine[]): Promise<void> {
  await eventually(
    'the controller to add its hook to every Machine',
    async () => {
      for (const m of machines) if (!((await machineAnnotations(m.name))[HOOK] !== undefined)) return false;
      return true;
    },
    60_000,
  );
}

describe('the controller image run as the chart’s Deployment runs it', { timeout: 10 * 60_000 }, () => {
  it('answers /readyz and /metrics, leads, and was denied nothing', async () => {
    const ready = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
    assert.equal(ready.status, 200);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    assert.match(metrics, /^harvester_machine_controller_leader(\{\})? 1$/m);
    assert.doesNotMatch(controller?.output() ?? '', /forbidden/i);
  });

  it('annotates every VM of a deleted cluster before its rm job, and releases every hook', async () => {
    const s = sbx();
    const machines = await guestCluster('img-a', 3);
    await waitHooks(machines);
    await s.rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name: 'img-a' });
    await waitFor(s.rancher.admin, {
      type: Resources.provisioningCluster,
      namespace: NS,
      name: 'img-a',
      timeoutMs: 120_000,
      description: 'cluster img-a to be deleted',
      until: (o) => o === undefined,
    });
    const seen = observations.filter((o) => machines.some((m) => o.machine === m.name));
    assert.deepEqual(
      seen.map((o) => o.machine).sort(),
      machines.map((m) => m.name).sort(),
      'one rm job per machine',
    );
    for (const o of seen) assert.equal(o.annotation, 'true', `${o.machine}: annotated before its rm job`);
    const vms = await s.harvester.admin.list<KubeObject>(Resources.virtualMachine, {
      namespace: VM_NS,
      labelSelector: `${LABEL_GUEST_CLUSTER_NAME}=img-a`,
    });
    assert.deepEqual(vms.items, []);
    // The Machines are gone, so their hooks were released (the CAPI stand-in waits for them);
    // the Event that says so (annotated, then released) is written behind the action.
    const releasedFor = async (): Promise<string[]> =>
      (
        await s.rancher.admin.list<KubeObject & { involvedObject?: { name?: string }; message?: string }>(
          Resources.event,
          { namespace: NS, fieldSelector: `reason=${Reasons.vmAnnotated}` },
        )
      ).items
        .filter((e) => e.message?.includes(`released ${HOOK}`))
        .map((e) => e.involvedObject?.name ?? '');
    await eventually(
      `an Event ${Reasons.vmAnnotated} (annotated, hook released) for every machine`,
      async () => {
        const names = await releasedFor();
        return machines.every((m) => names.includes(m.name));
      },
      30_000,
    ).catch(async (err: Error) => {
      throw new Error(
        `${err.message}; found for ${(await releasedFor()).join(', ')}\n${controller?.output()}`,
      );
    });
  });

  it('the pre-delete Job’s command removes every hook, and the controller stops adding them', async () => {
    const s = sbx();
    const machines = await guestCluster('img-b', 2);
    await waitHooks(machines);
    const hookJob = runAsPod({
      imageId,
      pod: job.spec.template.spec,
      podMeta: { name: `${RELEASE}-remove-hooks-k8x2p`, namespace: SYSTEM_NS },
      serviceAccount: await serviceAccount(),
      apiserver: apiserver(),
    });
    const code = await hookJob.exited;
    recordOutput('remove-hooks container', hookJob.output());
    assert.equal(code, 0, hookJob.output());
    assert.match(
      hookJob.output(),
      /removed 2 pre-terminate hook\(s\) harvester-machine-cleanup in fleet-image/,
    );
    for (const m of machines)
      assert.equal((await machineAnnotations(m.name))[HOOK], undefined, `${m.name}: no hook`);
    // Its Lease taken, the leader stops (and exits, for the Deployment to restart it).
    let timer: NodeJS.Timeout | undefined;
    const exit = await Promise.race([
      controller?.exited,
      new Promise((r) => (timer = setTimeout(() => r('still running'), 60_000))),
    ]);
    clearTimeout(timer);
    assert.equal(exit, 1, 'the controller exits once its Lease is gone');
    const lease = await s.rancher.admin.get<KubeObject & { spec?: { holderIdentity?: string } }>(
      Resources.lease,
      {
        namespace: SYSTEM_NS,
        name: 'harvester-machine-controller',
      },
    );
    assert.match(lease.spec?.holderIdentity ?? '', /^remove-hooks\//);
    for (const m of machines)
      assert.equal((await machineAnnotations(m.name))[HOOK], undefined, `${m.name}: none added back`);
  });
});
