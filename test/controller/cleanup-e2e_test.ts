// The first seed's scenario (docs/upstream/seeds.md#first-report) end to end on the whole sandbox: Harvester (control plane + stand-in
// controllers + CSI), Rancher's local cluster with the real Cluster API manager and Rancher's
// stand-in running the real driver's Remove in process as its rm job, the front proxy with
// Rancher tokens that expire, and the controller under the chart's RBAC. What is checked is
// what a user sees on Harvester: which VMs and which volumes are left.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANNOTATION_VOLUME_CLAIM_TEMPLATES, LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { harvesterCloudCredential, saveHarvesterCloudCredential } from '../../sandbox/rancher/credentials.js';
import {
  createGuestCluster,
  createMachineVm,
  scaleDownPool,
  type GuestClusterSpec,
  type GuestMachine,
} from '../../sandbox/rancher/guest-cluster.js';
import type { Sandbox } from '../../sandbox/sandbox.js';

import { eventuallyValue } from '../support/eventually.js';
import { useSandboxWorld } from './gate-fixture.js';

const NS = 'fleet-e2e';
const SYSTEM_NS = 'hm-e2e';
const VM_NS = 'default';
const DAY = 86_400_000;

let imageStorageClass: string | undefined;

const world = useSandboxWorld({
  namespace: NS,
  systemNamespace: SYSTEM_NS,
  prepare: async (sandbox) => {
    const image = await sandbox.harvester.admin.get<KubeObject & { status?: { storageClassName?: string } }>(
      Resources.virtualMachineImage,
      { namespace: VM_NS, name: sandbox.seeds.image },
    );
    imageStorageClass = image.status?.storageClassName;
  },
});
const sbx = (): Sandbox => world.sandbox;

interface Guest {
  machines: GuestMachine[];
  /** Boot volumes, from each VM's volumeClaimTemplates. */
  bootPvcs: string[];
  workloadPvcs: string[];
}

async function guest(
  spec: Omit<GuestClusterSpec, 'namespace' | 'vmNamespace' | 'downstreamKubeconfig'>,
  workloadVolumes: number,
): Promise<Guest> {
  const s = sbx();
  const machines = await createGuestCluster(s.rancher.admin, {
    ...spec,
    namespace: NS,
    vmNamespace: VM_NS,
    downstreamKubeconfig: s.kubeconfigs.rancherLocal,
  });
  const bootPvcs: string[] = [];
  for (const m of machines) {
    const vm = await createMachineVm(s.harvester.admin, {
      instanceName: m.instanceName,
      clusterName: spec.name,
      vmNamespace: VM_NS,
      image: `${VM_NS}/${s.seeds.image}`,
      ...(imageStorageClass ? { imageStorageClass } : {}),
    });
    const templates = JSON.parse(
      vm.metadata.annotations?.[ANNOTATION_VOLUME_CLAIM_TEMPLATES] ?? '[]',
    ) as Array<{ metadata: { name: string } }>;
    bootPvcs.push(...templates.map((t) => t.metadata.name));
  }
  // Workload volumes as the Harvester CSI driver makes them, hot-plugged round-robin.
  const workloadPvcs: string[] = [];
  for (let i = 0; i < workloadVolumes; i++) {
    const pvcName = await s.standIns.csi.createVolume({ namespace: VM_NS, size: '1Gi' });
    const m = machines[i % machines.length] as GuestMachine;
    await s.standIns.csi.hotplug({ namespace: VM_NS, vmName: m.instanceName, pvcName });
    workloadPvcs.push(pvcName);
  }
  await s.standIns.idle();
  const existing = await pvcNames();
  for (const p of [...bootPvcs, ...workloadPvcs])
    assert.ok(existing.has(p), `PVC ${p} exists before deletion`);
  return { machines, bootPvcs, workloadPvcs };
}

const pvcNames = async (): Promise<Set<string>> =>
  new Set(
    (await sbx().harvester.admin.list<KubeObject>(Resources.pvc, { namespace: VM_NS })).items
      .filter((p) => !p.metadata.deletionTimestamp)
      .map((p) => p.metadata.name),
  );
const vmsOf = async (cluster: string): Promise<string[]> =>
  (
    await sbx().harvester.admin.list<KubeObject>(Resources.virtualMachine, {
      namespace: VM_NS,
      labelSelector: `${LABEL_GUEST_CLUSTER_NAME}=${cluster}`,
    })
  ).items.map((v) => v.metadata.name);

async function deleteClusterAndWait(name: string): Promise<void> {
  const { rancher } = sbx();
  await rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name });
  await waitFor(rancher.admin, {
    type: Resources.provisioningCluster,
    namespace: NS,
    name,
    timeoutMs: 120_000,
    description: `cluster ${name} to be deleted`,
    until: (o) => o === undefined,
  });
}

/** PVC deletion finishes asynchronously (pvc-protection, finalizers): wait until all listed are gone. */
async function waitPvcsGone(names: string[]): Promise<void> {
  await eventuallyValue(
    (still) => `PVCs left on Harvester: ${still.join(', ')}`,
    async () => {
      const existing = await pvcNames();
      return names.filter((n) => existing.has(n));
    },
    (still) => still.length === 0,
    60_000,
  );
}

describe('deleting guest clusters on the sandbox (controller + Cluster API + real driver)', () => {
  it("removes every VM and volume of a deleted 3-machine cluster, keeps another cluster's, and a scale-down keeps workload volumes", async (t) => {
    const s = sbx();
    const started = Date.now();
    const cc = `${s.cloudCredential.namespace}:${s.cloudCredential.name}`;
    const a = await guest(
      {
        name: 'seed-a',
        clusterCredential: cc,
        pools: [
          { name: 'cp', quantity: 1 },
          { name: 'wk', quantity: 2 },
        ],
      },
      3,
    );
    const b = await guest({ name: 'seed-b', clusterCredential: cc, pools: [{ name: 'wk', quantity: 2 }] }, 2);
    t.diagnostic(`two clusters with volumes created in ${Date.now() - started} ms`);
    let phase = Date.now();

    // Scale-down of seed-b by one: its VM and boot volume go, its workload volume stays.
    const victim = b.machines[0] as GuestMachine;
    await scaleDownPool(s.rancher.admin, {
      namespace: NS,
      cluster: 'seed-b',
      pool: 'wk',
      machine: victim.name,
    });
    await waitFor(s.rancher.admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: victim.name,
      timeoutMs: 60_000,
      description: 'the scaled-down machine to go',
      until: (o) => o === undefined,
    });
    assert.deepEqual(await vmsOf('seed-b'), [b.machines[1]?.instanceName]);
    const afterScale = await pvcNames();
    for (const p of b.workloadPvcs) assert.ok(afterScale.has(p), `workload volume ${p} kept on scale-down`);
    t.diagnostic(`scale-down by one in ${Date.now() - phase} ms`);
    phase = Date.now();

    await deleteClusterAndWait('seed-a');
    assert.deepEqual(await vmsOf('seed-a'), []);
    await waitPvcsGone([...a.bootPvcs, ...a.workloadPvcs]);
    t.diagnostic(`3-machine cluster deleted, VMs and volumes gone, in ${Date.now() - phase} ms`);
    const left = await pvcNames();
    for (const p of b.workloadPvcs) assert.ok(left.has(p), `seed-b volume ${p} untouched`);
    assert.deepEqual(await vmsOf('seed-b'), [b.machines[1]?.instanceName]);
  });

  it('does the same with a pool-level credential and none on the cluster', async () => {
    const s = sbx();
    const token = await s.newRancherToken({ ttlMs: DAY });
    await saveHarvesterCloudCredential(
      s.rancher.admin,
      harvesterCloudCredential({ name: 'cc-e2e-pool', kubeconfig: token.kubeconfig, clusterId: s.clusterId }),
    );
    const g = await guest(
      {
        name: 'seed-pool',
        pools: [{ name: 'wk', quantity: 2, credential: 'cattle-global-data:cc-e2e-pool' }],
      },
      2,
    );
    await deleteClusterAndWait('seed-pool');
    assert.deepEqual(await vmsOf('seed-pool'), []);
    await waitPvcsGone([...g.bootPvcs, ...g.workloadPvcs]);
  });

  it('holds the gate while the cluster credential is expired, then succeeds after renewal', async () => {
    const s = sbx();
    const short = await s.newRancherToken({ ttlMs: 1500 });
    await saveHarvesterCloudCredential(
      s.rancher.admin,
      harvesterCloudCredential({
        name: 'cc-e2e-exp',
        kubeconfig: short.kubeconfig,
        clusterId: s.clusterId,
        ...(short.expiresAt ? { expiresAt: short.expiresAt } : {}),
      }),
    );
    const g = await guest(
      {
        name: 'seed-exp',
        clusterCredential: 'cattle-global-data:cc-e2e-exp',
        pools: [{ name: 'wk', quantity: 2 }],
      },
      2,
    );
    await new Promise((r) =>
      setTimeout(r, Math.max(0, (short.expiresAt?.getTime() ?? 0) - Date.now() + 500)),
    );
    await s.rancher.admin.delete(Resources.provisioningCluster, { namespace: NS, name: 'seed-exp' });
    const first = g.machines[0] as GuestMachine;
    await waitFor<
      KubeObject & { status?: { conditions?: Array<{ type: string; status: string; reason?: string }> } }
    >(s.rancher.admin, {
      type: Resources.capiMachine,
      namespace: NS,
      name: first.name,
      timeoutMs: 30_000,
      description: 'the gate to be held on the rejected credential',
      until: (o) =>
        o?.status?.conditions?.some(
          (c) => c.type === 'HarvesterVolumeCleanup' && c.reason === 'HarvesterCredentialRejected',
        ) ?? false,
    });
    const events = await s.rancher.admin.list<KubeObject & { message?: string }>(Resources.event, {
      namespace: NS,
      fieldSelector: 'reason=HarvesterCredentialRejected',
    });
    assert.ok(events.items.some((e) => /cc-e2e-exp/.test(e.message ?? '')));
    assert.equal((await vmsOf('seed-exp')).length, 2, 'nothing removed while held');
    assert.equal(
      world.standIn.removals.filter((r) => r.machine.endsWith(first.name)).length,
      0,
      'no removal job ran',
    );

    // Renew, as Rancher's UI does: a new token for the same user, saved into the same credential.
    const renewed = await s.newRancherToken({ ttlMs: DAY, userId: short.userId });
    await saveHarvesterCloudCredential(
      s.rancher.admin,
      harvesterCloudCredential({
        name: 'cc-e2e-exp',
        kubeconfig: renewed.kubeconfig,
        clusterId: s.clusterId,
        ...(renewed.expiresAt ? { expiresAt: renewed.expiresAt } : {}),
      }),
    );
    await waitFor(s.rancher.admin, {
      type: Resources.provisioningCluster,
      namespace: NS,
      name: 'seed-exp',
      timeoutMs: 120_000,
      description: 'seed-exp to be deleted after renewal',
      until: (o) => o === undefined,
    });
    assert.deepEqual(await vmsOf('seed-exp'), []);
    await waitPvcsGone([...g.bootPvcs, ...g.workloadPvcs]);
  });

  it('keeps the workload volumes of an opted-out cluster', async () => {
    const s = sbx();
    const cc = `${s.cloudCredential.namespace}:${s.cloudCredential.name}`;
    const g = await guest(
      { name: 'seed-opt', clusterCredential: cc, optOut: true, pools: [{ name: 'wk', quantity: 2 }] },
      2,
    );
    await deleteClusterAndWait('seed-opt');
    assert.deepEqual(await vmsOf('seed-opt'), []);
    await waitPvcsGone(g.bootPvcs);
    const left = await pvcNames();
    for (const p of g.workloadPvcs) assert.ok(left.has(p), `opted-out workload volume ${p} kept`);
  });
});
