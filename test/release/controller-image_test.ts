// The released controller, installed as an operator installs it: `helm install` of the
// packaged chart into the sandbox's Rancher apiserver, `podman load` of the OCI archive, and
// the installed Deployment's pod run with `podman run` as a kubelet would run it (its env,
// args, user and security context: read-only root, capabilities dropped, /tmp its emptyDir;
// the ServiceAccount's TokenRequest token, CA and namespace at the in-cluster path;
// KUBERNETES_SERVICE_HOST/PORT at the apiserver on 127.0.0.1, host network). A guest cluster
// deleted through the sandbox's Rancher stand-ins, with the real driver's Remove as the rm
// job, must have every VM annotated when its job starts and every hook released. Then
// `helm upgrade`, and `helm uninstall`, whose pre-delete Job (run the same way: the sandbox
// has no kubelet and no Job controller, so the test plays both) removes every hook before
// the release goes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ANNOTATION_REMOVE_ALL_PVCS, LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import { hookAnnotation, Reasons } from '../../src/controller/constants.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { freePort } from '../../sandbox/control-plane/ports.js';
import { serviceAccountToken } from '../../sandbox/control-plane/service-account-token.js';
import { startRancherStandIn, type RancherStandIn } from '../../sandbox/rancher/rancher-standin.js';
import {
  createGuestCluster,
  createMachineVm,
  type GuestMachine,
} from '../../sandbox/rancher/guest-cluster.js';
import { driverRemovalJob } from '../../sandbox/rancher/removal-job.js';
import { releaseArtifacts, type ReleaseArtifacts } from '../../sandbox/release/artifacts.js';
import { helm } from '../../sandbox/release/helm.js';
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
  spec: {
    template: {
      spec: PodSpec & { containers: Array<{ image: string; env?: Array<{ name: string; value?: string }> }> };
    };
  };
  status?: Record<string, unknown>;
}
const DEPLOYMENT: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};
const JOB: ResourceType = { group: 'batch', version: 'v1', plural: 'jobs', kind: 'Job', namespaced: true };

let sandbox: Sandbox | undefined;
let standIn: RancherStandIn | undefined;
let controller: RunningContainer | undefined;
let metricsPort = 0;
let artifacts: ReleaseArtifacts;
let imageId = '';
let helmDir = '';
const helmArgs = (): string[] => ['--kubeconfig', path.join(helmDir, 'kubeconfig'), '--namespace', SYSTEM_NS];
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
    startSandbox({
      standIns: { delays: { guestAgentMs: 100, shutdownMs: 50 } },
      clusterApi: { namespace: NS },
    }),
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
  // As an operator installs it (values as a file, the kubeconfig of Rancher's local cluster).
  helmDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-helm-'));
  fs.writeFileSync(path.join(helmDir, 'kubeconfig'), rancher.adminKubeconfig, { mode: 0o600 });
  fs.writeFileSync(
    path.join(helmDir, 'values.json'),
    JSON.stringify({ watchNamespaces: [NS], probeInterval: '1m' }),
  );
  await helm([
    'install',
    RELEASE,
    artifacts.chart,
    ...helmArgs(),
    '--values',
    path.join(helmDir, 'values.json'),
  ]);
  const deployment = await rancher.admin.get<Workload>(DEPLOYMENT, { namespace: SYSTEM_NS, name: RELEASE });
  assert.equal(
    deployment.spec.template.spec.containers[0]?.image,
    `harvester-machine/controller:${artifacts.version}`,
  );

  // Rancher's rm job: looks at the VM as it is when the job starts, then the driver's Remove.
  const remove = driverRemovalJob(rancher.admin);
  standIn = await startRancherStandIn(rancher.admin, {
    namespace: NS,
    retryDelayMs: 500,
    removalJob: async (ctx) => {
      const name = ctx.harvesterMachine.metadata.name;
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
  if (helmDir) fs.rmSync(helmDir, { recursive: true, force: true });
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
  const machines = await createGuestCluster(s.rancher.admin, {
    name,
    namespace: NS,
    vmNamespace: VM_NS,
    clusterCredential: `${s.cloudCredential.namespace}:${s.cloudCredential.name}`,
    pools: [{ name: 'wk', quantity }],
    downstreamKubeconfig: s.kubeconfigs.rancherLocal,
  });
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
    // One rm job per machine; a job whose run failed runs again (its backoffLimit), as Rancher's
    // Job does, and each run must find the VM annotated.
    assert.deepEqual(
      [...new Set(seen.map((o) => o.machine))].sort(),
      machines.map((m) => m.name).sort(),
      'an rm job for every machine',
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

  it('helm upgrade changes the installed Deployment and runs no hook', async () => {
    await helm([
      'upgrade',
      RELEASE,
      artifacts.chart,
      ...helmArgs(),
      '--reuse-values',
      '--set',
      'logLevel=debug',
    ]);
    const deployment = await sbx().rancher.admin.get<Workload>(DEPLOYMENT, {
      namespace: SYSTEM_NS,
      name: RELEASE,
    });
    const env = deployment.spec.template.spec.containers[0]?.env ?? [];
    assert.equal(env.find((e) => e.name === 'LOG_LEVEL')?.value, 'debug');
    assert.equal(env.find((e) => e.name === 'WATCH_NAMESPACES')?.value, NS, 'values reused');
    const jobs = await sbx().rancher.admin.list<KubeObject>(JOB, { namespace: SYSTEM_NS });
    assert.deepEqual(jobs.items, [], 'the remove-hooks Job runs on uninstall only');
  });

  it('helm uninstall runs the pre-delete Job first: it removes every hook and the controller stops, then the release goes', async () => {
    const s = sbx();
    const machines = await guestCluster('img-b', 2);
    await waitHooks(machines);
    const uninstall = helm(['uninstall', RELEASE, ...helmArgs(), '--timeout', '5m']);
    // The Job controller and the kubelet, played: the Job's pod under podman, then its status.
    const job = await waitFor<Workload>(s.rancher.admin, {
      type: JOB,
      namespace: SYSTEM_NS,
      name: `${RELEASE}-remove-hooks`,
      timeoutMs: 60_000,
      description: 'helm to create the pre-delete Job',
      until: (o) => o !== undefined,
    });
    assert.ok(job);
    assert.equal(job.metadata.annotations?.['helm.sh/hook'], 'pre-delete');
    assert.ok(
      await s.rancher.admin.find(DEPLOYMENT, { namespace: SYSTEM_NS, name: RELEASE }),
      'the controller is still installed while the Job runs',
    );
    const hookPod = runAsPod({
      imageId,
      pod: job.spec.template.spec,
      podMeta: { name: `${RELEASE}-remove-hooks-k8x2p`, namespace: SYSTEM_NS },
      serviceAccount: await serviceAccount(),
      apiserver: apiserver(),
    });
    const code = await hookPod.exited;
    recordOutput('remove-hooks container', hookPod.output());
    assert.equal(code, 0, hookPod.output());
    assert.match(
      hookPod.output(),
      /removed 2 pre-terminate hook\(s\) harvester-machine-cleanup in fleet-image/,
    );
    for (const m of machines)
      assert.equal((await machineAnnotations(m.name))[HOOK], undefined, `${m.name}: no hook`);
    // Its Lease taken, the leader has stopped (and exited, for the Deployment to restart it).
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

    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const condition = (type: string): Record<string, string> => ({
      type,
      status: 'True',
      lastTransitionTime: now,
    });
    const current = await s.rancher.admin.get<Workload>(JOB, {
      namespace: SYSTEM_NS,
      name: job.metadata.name,
    });
    await s.rancher.admin.update<Workload>(
      JOB,
      {
        ...current,
        status: {
          startTime: now,
          completionTime: now,
          succeeded: 1,
          conditions: [condition('SuccessCriteriaMet'), condition('Complete')],
        },
      },
      'status',
    );
    await uninstall;
    assert.equal(await s.rancher.admin.find(DEPLOYMENT, { namespace: SYSTEM_NS, name: RELEASE }), undefined);
    assert.equal(
      await s.rancher.admin.find(Resources.serviceAccount, { namespace: SYSTEM_NS, name: RELEASE }),
      undefined,
    );
    for (const m of machines)
      assert.equal((await machineAnnotations(m.name))[HOOK], undefined, `${m.name}: none added back`);
  });
});
