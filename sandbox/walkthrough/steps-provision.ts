// Steps 2-4: Rancher's side comes up (Rancher's stand-in beside the real Cluster API, our
// cleanup controller), Rancher provisions two guest clusters — Cluster API makes their Machines
// from each pool's MachineDeployment, Rancher's create jobs run the real rancher-machine with our
// plugin executable — and the guest clusters' workloads claim volumes through the Harvester CSI
// driver.
import { keyText } from '../../src/api/object-key.js';
import { describeClusterApi } from '../capi/manager.js';
import { GuestKubeconfigs } from '../rancher/guest-kubeconfigs.js';
import type { CreatedVolume } from '../standins/csi/csi.js';
import { createGuestCluster, type GuestMachine } from '../rancher/guest-cluster.js';
import {
  checkCreateJobs,
  checkMachineStates,
  checkPreTerminateHooks,
  checkVmsRunning,
  type ProvisionedMachine,
} from './steps-provision-checks.js';
import type { Story } from './story.js';
import { FLEET_NS, SYSTEM_NS } from './world.js';

export { HOOK } from './steps-provision-checks.js';

export async function startRancherSide(story: Story, retryDelayMs: number): Promise<void> {
  const { world, say } = story;
  await world.startRancherSide(retryDelayMs);
  const synced = await world.controller.waitForLine((l) => l.msg === 'caches synced', 'caches synced');
  say.say(
    'controller',
    `node dist/src/controller/main.js --namespace ${FLEET_NS} --leader-election-namespace ${SYSTEM_NS} (pid ${world.controller.pid ?? '?'}): leader, caches synced at ${synced.ts}`,
  );
  const capi = world.sandbox.clusterApi;
  say.say(
    'CAPI',
    `${capi ? describeClusterApi(capi) : 'Cluster API'} controller-manager (pid ${capi?.pid ?? '?'}), watching ${FLEET_NS}: makes each pool's Machines, deletes a deleted cluster's Machines, waits at their pre-terminate hooks, then deletes each HarvesterMachine`,
  );
  say.say(
    'Rancher',
    `stand-in for Rancher's own controllers in ${FLEET_NS}: bootstrap, each HarvesterMachine's create job (rancher-machine) and node registration, and its rm job (rancher-machine) once Cluster API deletes it, retried like backoffLimit 3`,
  );
  say.check(
    world.controller.lines().some((l) => l.msg === 'became leader'),
    'the cleanup controller holds its Lease',
  );
}

/** A cluster the walkthrough provisions: one pool of `quantity` machines. */
export interface ClusterToProvision {
  name: string;
  quantity: number;
  machineConfig?: Record<string, string>;
}

/**
 * Provisions clusters as Rancher does: the provisioning Cluster and its pools' MachineDeployments;
 * Cluster API makes the Machines, Rancher's stand-in runs one create job per machine, all at once.
 */
export async function provisionClusters(story: Story, specs: ClusterToProvision[]): Promise<void> {
  const { sandbox } = story.world;
  const cc = `${sandbox.cloudCredential.namespace}:${sandbox.cloudCredential.name}`;
  const guests = await createClusters(story, specs, cc);
  const all = tellProvisioned(story, guests, cc);
  checkCreateJobs(story, all);
  await checkMachineStates(story, all);
  await checkVmsRunning(story, all);
  await checkPreTerminateHooks(story, all);
}

/** Creates the clusters at once; resolves with each one's machines once all are Running. */
async function createClusters(
  story: Story,
  specs: ClusterToProvision[],
  cc: string,
): Promise<Array<{ spec: ClusterToProvision; machines: GuestMachine[] }>> {
  const { sandbox } = story.world;
  return Promise.all(
    specs.map(async (spec) => {
      const machines = await createGuestCluster(sandbox.rancher.admin, {
        namespace: FLEET_NS,
        name: spec.name,
        clusterCredential: cc,
        pools: [
          {
            name: 'pool1',
            quantity: spec.quantity,
            ...(spec.machineConfig ? { machineConfig: spec.machineConfig } : {}),
          },
        ],
        vmNamespace: sandbox.seeds.namespace,
        // No downstreamKubeconfig: Rancher's stand-in starts the guest's own apiserver.
        timeoutMs: 240_000,
      });
      return { spec, machines };
    }),
  );
}

/** Records the clusters in the story and tells what Rancher and Cluster API made for each. */
function tellProvisioned(
  story: Story,
  guests: Array<{ spec: ClusterToProvision; machines: GuestMachine[] }>,
  cc: string,
): ProvisionedMachine[] {
  const { world, say } = story;
  const all: ProvisionedMachine[] = [];
  for (const g of world.standIn.guestControlPlanes?.figures() ?? [])
    say.say(
      'guest',
      `${g.cluster}: its own kube-apiserver (on Rancher's etcd, its own prefix), ready in ${(g.startMs / 1000).toFixed(1)} s, ${g.rssMiB ?? '?'} MiB resident; Rancher wrote its ${g.cluster.split('/')[1] ?? ''}-kubeconfig`,
    );
  for (const { spec, machines } of guests) {
    story.clusters.set(spec.name, { name: spec.name, machines, workloadPvcs: [] });
    all.push(...machines.map((machine) => ({ cluster: spec.name, machine })));
    say.say(
      'Rancher',
      `provisioning Cluster ${keyText(FLEET_NS, spec.name)} (pool1 × ${spec.quantity}${
        spec.machineConfig
          ? `, HarvesterConfig ${Object.entries(spec.machineConfig)
              .map(([k, v]) => `${k}: ${v}`)
              .join(', ')}`
          : ''
      }, cloud credential ${cc}): CAPI Cluster, MachineDeployment ${spec.name}-pool1 and its templates created`,
    );
    say.say(
      'CAPI',
      `${spec.name}: MachineSet → ${machines.map((m) => m.name).join(', ')}, each with its HarvesterMachine and RKEBootstrap; all Running once Rancher's create job finished and the node registered`,
    );
  }
  return all;
}

/**
 * Workload volumes as the Harvester CSI driver makes them: hot-plugged ones, and one attached to
 * no VM (a stopped workload's), none labelled (the released driver labels nothing); each guest's
 * claim and PV in that guest's own apiserver. Then the cleanup controller, watching each guest's
 * PVs, records on every host volume whose it is.
 */
export async function attachVolumes(
  story: Story,
  plan: Array<{ cluster: string; sizes: string[]; unattached?: string }>,
): Promise<void> {
  const { world, say, view } = story;
  const { csi } = world.sandbox.standIns;
  const namespace = view.namespace;
  const guests = new GuestKubeconfigs(world.sandbox.rancher.admin);
  const madeAt = new Map<string, number>();
  try {
    for (const { cluster, sizes, unattached } of plan) {
      const guest = story.guest(cluster);
      const api = await guests.client(FLEET_NS, cluster);
      for (const [i, size] of sizes.entries()) {
        const vmName = (guest.machines[i % guest.machines.length] as GuestMachine).instanceName;
        const v = await csi.provision({ namespace, size, guest: api });
        madeAt.set(v.hostPvc, Date.now());
        await csi.hotplug({ namespace, vmName, pvcName: v.hostPvc });
        guest.workloadPvcs.push(v.hostPvc);
        view.track({ name: v.hostPvc, cluster, what: `hot-plugged into ${vmName}`, size });
        say.say(
          'CSI',
          `${cluster}: a ${size} workload PVC ${describeClaim(v)} → host volume ${v.hostPvc} (no label), hot-plugged into ${vmName}`,
        );
      }
      if (unattached) {
        const v = await csi.provision({ namespace, size: unattached, guest: api });
        madeAt.set(v.hostPvc, Date.now());
        guest.workloadPvcs.push(v.hostPvc);
        view.track({ name: v.hostPvc, cluster, what: 'never attached', size: unattached });
        say.say(
          'CSI',
          `${cluster}: a ${unattached} volume of a stopped workload ${describeClaim(v)} → ${v.hostPvc}, no label, attached to no VM (the volume that leaks with the released driver: harvester#7765)`,
        );
      }
    }
  } finally {
    guests.close();
  }
  await world.sandbox.standIns.idle();
  for (const { cluster } of plan) {
    for (const m of story.guest(cluster).machines) {
      const attached = await view.hotplugged(m.instanceName);
      const expected = view
        .of(cluster)
        .filter((p) => p.what === `hot-plugged into ${m.instanceName}`)
        .map((p) => p.name);
      say.check(
        expected.every((p) => attached.includes(p)),
        `VM ${m.instanceName} has its ${expected.length} hot-plugged volume(s) in its spec`,
      );
    }
  }
  // The controller's watch of each guest's PVs records whose each host volume is.
  const recorded = await view.waitRecorded(
    plan.flatMap(({ cluster }) => story.guest(cluster).workloadPvcs.map((name) => ({ name, cluster }))),
  );
  for (const { cluster } of plan) {
    const mine = story.guest(cluster).workloadPvcs;
    const ok = mine.filter((n) => recorded.get(n)?.label === cluster);
    const lag = Math.max(0, ...ok.map((n) => (recorded.get(n)?.seenAt ?? 0) - (madeAt.get(n) ?? 0)));
    say.check(
      ok.length === mine.length,
      `the cleanup controller, watching ${cluster}'s PersistentVolumes, labelled its ${ok.length}/${mine.length} host volume(s) guestcluster.harvesterhci.io/name=${cluster} (within ${(lag / 1000).toFixed(1)} s of each)`,
      mine.filter((n) => !ok.includes(n)).join(', '),
    );
  }
  const now = await view.states();
  say.say('Harvester', 'volumes:');
  say.table([...story.pvcHeader(), 'now', 'label'], view.rows([now], recorded));
  say.check(
    view.pvcs.every((p) => now.get(p.name) === 'present'),
    `all ${view.pvcs.length} volumes exist`,
  );
}

function describeClaim(v: CreatedVolume): string {
  return v.guestClaim
    ? `${keyText(v.guestClaim.namespace, v.guestClaim.name)} (guest PV ${v.guestPv ?? '?'})`
    : '';
}
