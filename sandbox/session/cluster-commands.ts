// The sandbox commands about guest clusters, each a step the walkthrough plays, run by hand
// against a running `sandbox up` (session/state.ts), each printing what it did:
//   create-cluster  Rancher provisions a guest cluster: its objects and its pool's
//                   MachineDeployment; the real Cluster API makes the Machines, and `up`'s
//                   Rancher stand-in runs one create job per machine through the real
//                   rancher-machine and our plugin executable
//   workload-volume a workload's volume as the Harvester CSI driver makes and hot-plugs it
//   load-balancer   the guest cluster's cloud provider makes a load balancer for a Service
//   delete-cluster  the user deletes the cluster in Rancher; waits until Rancher is done
//   job-logs        what Rancher's rm jobs printed (the pod logs of step 10 of the first seed)
import crypto from 'node:crypto';
import fs from 'node:fs';
import { keyText, keyTextOf } from '../../src/api/object-key.js';
import { LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import { describeLoadBalancer, LB_LABEL_CLUSTER } from '../../src/harvester/load-balancers.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/harvester/types.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { machineDeploymentName } from '../../src/rancher/names.js';
import { createGuestCluster, type GuestMachine } from '../rancher/guest-cluster.js';
import { ensureGuestLoadBalancer, ensureIpPool } from '../standins/cloud-provider.js';
import { csiStandIn, type CreatedVolume } from '../standins/csi/csi.js';
import { GuestKubeconfigs } from '../rancher/guest-kubeconfigs.js';
import { readBinaries, readJobs, type JobRecord } from './rancher-side.js';
import type { Session } from './state.js';

export type Say = (who: string, line: string) => void;

const fmtClaim = (v: CreatedVolume): string =>
  v.guestClaim ? keyText(v.guestClaim.namespace, v.guestClaim.name) : '?';

export class CommandError extends Error {}

const HOOK_PREFIX = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/';
/** The sandbox's IP pool for guest clusters' load balancers (a documentation range, RFC 5737). */
export const SANDBOX_POOL = {
  name: 'sandbox-pool',
  subnet: '192.0.2.0/24',
  rangeStart: '192.0.2.10',
  rangeEnd: '192.0.2.99',
  gateway: '192.0.2.1',
};

async function clusterVms(s: Session, cluster: string): Promise<Array<VirtualMachine & KubeObject>> {
  const list = await s.harvester.list<VirtualMachine & KubeObject>(Resources.virtualMachine, {
    namespace: s.state.seeds.namespace,
    labelSelector: `${LABEL_GUEST_CLUSTER_NAME}=${cluster}`,
  });
  return list.items;
}

/** Waits (up to `timeoutMs`) for the binaries `up` builds or finds in the cache for the jobs. */
async function upBinaries(
  s: Session,
  timeoutMs: number,
): Promise<{ rancherMachine: string; plugin: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const b = readBinaries(s.dir);
    if (b && 'error' in b) throw new CommandError(b.error);
    if (b) return b;
    if (Date.now() > deadline)
      throw new CommandError(
        `rancher-machine and the plugin executable are not built within ${timeoutMs / 1000} s (see sandbox up's output)`,
      );
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** What the create jobs did and where the VMs are, once every Machine is Running. */
async function sayCreated(s: Session, say: Say, cluster: string, machines: GuestMachine[]): Promise<void> {
  const creates = readJobs(s.dir).filter((r) => r.kind === 'create' && r.cluster === cluster);
  const first = creates.find((r) => r.command);
  if (first) {
    say(
      'Rancher',
      `create job(s) from an empty home, environment from the cloud credential (${first.envNames?.join(', ') ?? ''})`,
    );
    say('Rancher', `create job command line: ${first.command ?? ''}`);
  }
  for (const m of machines) {
    const r = creates.find((c) => c.machine === m.name);
    say(
      'Rancher',
      r ? `${fmt(r)}, state saved in ${m.name}-machine-state` : `no create job of ${m.name} on record`,
    );
  }
  const vmis = await s.harvester.list<VirtualMachineInstance & KubeObject>(Resources.virtualMachineInstance, {
    namespace: s.state.seeds.namespace,
  });
  for (const vm of await clusterVms(s, cluster)) {
    const vmi = vmis.items.find((i) => i.metadata.name === vm.metadata.name);
    const ip = vmi?.status?.interfaces?.find((i) => i.ipAddress)?.ipAddress ?? 'no IP yet';
    say('Harvester', `VM ${keyTextOf(vm)}: ${vmi?.status?.phase ?? 'no instance'}, ${ip}`);
  }
}

export async function createCluster(
  s: Session,
  say: Say,
  opts: { name: string; machines: number; pool: string; timeoutMs: number },
): Promise<void> {
  const ns = s.state.fleetNamespace;
  const cc = `${s.state.cloudCredential.namespace}:${s.state.cloudCredential.name}`;
  if (await s.rancher.find(Resources.provisioningCluster, { namespace: ns, name: opts.name }))
    throw new CommandError(`Rancher already has a cluster ${keyText(ns, opts.name)}`);
  const binaries = await upBinaries(s, opts.timeoutMs);
  const plugin = fs.readFileSync(binaries.plugin);
  say('jobs', `rancher-machine ${binaries.rancherMachine}`);
  say(
    'jobs',
    `plugin executable ${binaries.plugin} (sha256 ${crypto.createHash('sha256').update(plugin).digest('hex')}), the node driver Rancher runs`,
  );
  say(
    'Rancher',
    `provisioning Cluster ${keyText(ns, opts.name)} (${opts.pool} × ${opts.machines}, cloud credential ${cc}): CAPI Cluster, MachineDeployment ${machineDeploymentName(opts.name, opts.pool)} and its templates`,
  );
  let machines: GuestMachine[];
  try {
    machines = await createGuestCluster(s.rancher, {
      namespace: ns,
      name: opts.name,
      clusterCredential: cc,
      pools: [{ name: opts.pool, quantity: opts.machines }],
      vmNamespace: s.state.seeds.namespace,
      // No downstreamKubeconfig: `up` starts the guest's own apiserver and writes <cluster>-kubeconfig.
      timeoutMs: opts.timeoutMs,
    });
  } catch (err) {
    const failed = readJobs(s.dir).filter(
      (r) => r.kind === 'create' && r.cluster === opts.name && r.ok === false,
    );
    for (const r of failed) say('Rancher', fmt(r));
    const log = failed[0]?.log;
    const output = log && fs.existsSync(log) ? `\n${fs.readFileSync(log, 'utf8')}` : '';
    throw new CommandError(`${err instanceof Error ? err.message : String(err)}${output}`);
  }
  say(
    'CAPI',
    `${opts.name}: MachineSet → Machine(s) ${machines.map((m) => m.name).join(', ')}, each with its HarvesterMachine and RKEBootstrap; Running once its create job finished and its node registered`,
  );
  await sayCreated(s, say, opts.name, machines);
  for (const m of machines)
    await waitFor(s.rancher, {
      type: Resources.capiMachine,
      namespace: ns,
      name: m.name,
      timeoutMs: 30_000,
      description: `the cleanup controller's pre-terminate hook on Machine ${m.name}`,
      until: (o) => Object.keys(o?.metadata.annotations ?? {}).some((k) => k.startsWith(HOOK_PREFIX)),
    });
  say('controller', `pre-terminate hook on all ${machines.length} Machine(s) of ${opts.name}`);
  say('sandbox', `guest cluster ${opts.name} created`);
}

export async function workloadVolume(
  s: Session,
  say: Say,
  opts: { cluster: string; size: string; vm?: string; unattached: boolean },
): Promise<void> {
  const namespace = s.state.seeds.namespace;
  const vms = await clusterVms(s, opts.cluster);
  if (vms.length === 0) throw new CommandError(`guest cluster ${opts.cluster} has no VM in ${namespace}`);
  const vm = opts.vm ?? vms[0]?.metadata.name ?? '';
  if (!opts.unattached && !vms.some((v) => v.metadata.name === vm))
    throw new CommandError(`VM ${vm} is not a VM of guest cluster ${opts.cluster}`);
  const csi = csiStandIn(s.harvester);
  const guests = new GuestKubeconfigs(s.rancher);
  let created: CreatedVolume;
  try {
    // The guest's PVC and PV go into its own apiserver, as its external-provisioner makes them.
    const guest = await guests.client(s.state.fleetNamespace, opts.cluster);
    created = await csi.provision({ namespace, size: opts.size, guest });
  } finally {
    guests.close();
  }
  const pvc = created.hostPvc;
  if (opts.unattached) {
    say(
      'CSI',
      `${opts.cluster}: a ${opts.size} volume of a stopped workload: host volume ${keyText(namespace, pvc)} (no label, as the released driver makes it), attached to no VM; in the guest, PersistentVolume ${created.guestPv ?? '?'} bound to claim ${fmtClaim(created)}`,
    );
    return;
  }
  await csi.hotplug({ namespace, vmName: vm, pvcName: pvc });
  await waitFor<VirtualMachine & KubeObject>(s.harvester, {
    type: Resources.virtualMachine,
    namespace,
    name: vm,
    timeoutMs: 30_000,
    description: `${pvc} in VM ${vm}'s spec`,
    until: (o) =>
      (o?.spec.template.spec.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === pvc),
  });
  say(
    'CSI',
    `${opts.cluster}: a ${opts.size} workload PVC on the Harvester storage class: host volume ${keyText(namespace, pvc)}, hot-plugged into VM ${keyText(namespace, vm)}; in the guest, PersistentVolume ${created.guestPv ?? '?'} bound to claim ${fmtClaim(created)}`,
  );
}

export async function loadBalancer(
  s: Session,
  say: Say,
  opts: { cluster: string; service: string; ipam: 'pool' | 'dhcp' },
): Promise<void> {
  const [svcNs, svcName] = opts.service.includes('/')
    ? opts.service.split('/', 2)
    : ['default', opts.service];
  if (!svcNs || !svcName) throw new CommandError(`--service ${opts.service}: expected <namespace>/<name>`);
  if (opts.ipam === 'pool') {
    await ensureIpPool(s.harvester, SANDBOX_POOL);
    say(
      'Harvester',
      `IP pool ${SANDBOX_POOL.name}: ${SANDBOX_POOL.rangeStart}-${SANDBOX_POOL.rangeEnd} of ${SANDBOX_POOL.subnet}, for every namespace and guest cluster`,
    );
  }
  const lb = await ensureGuestLoadBalancer(s.harvester, {
    cluster: opts.cluster,
    namespace: s.state.seeds.namespace,
    service: { namespace: svcNs, name: svcName },
    ipam: opts.ipam,
  });
  say(
    'guest',
    `${opts.cluster}'s cloud provider: Service ${keyText(svcNs, svcName)} of type LoadBalancer → Harvester load balancer ${describeLoadBalancer(lb)}, labelled ${LB_LABEL_CLUSTER}=${opts.cluster}`,
  );
}

const fmt = (r: JobRecord): string => {
  const end = r.finishedAt
    ? `${r.ok ? 'exit 0' : `exit ${String(r.code)}`}${r.durationMs !== undefined ? ` in ${(r.durationMs / 1000).toFixed(1)} s` : ''}`
    : 'running';
  const annotation =
    r.kind === 'rm'
      ? `, VM annotation removeAllPersistentVolumeClaims=${r.annotationAtStart ?? '(absent)'} when it started`
      : '';
  return `${r.kind} job ${r.machine} attempt ${r.attempt} (credential token ${r.token ?? '(none)'}${annotation}): ${end}`;
};

export async function deleteCluster(
  s: Session,
  say: Say,
  opts: { name: string; timeoutMs: number },
): Promise<void> {
  const ns = s.state.fleetNamespace;
  const machines = (await s.rancher.list<KubeObject>(Resources.capiMachine, { namespace: ns })).items
    .filter((m) => m.metadata.labels?.['cluster.x-k8s.io/cluster-name'] === opts.name)
    .map((m) => m.metadata.name);
  if (!(await s.rancher.delete(Resources.provisioningCluster, { namespace: ns, name: opts.name })))
    throw new CommandError(`Rancher has no cluster ${keyText(ns, opts.name)}`);
  say(
    'Rancher',
    `DELETE provisioning Cluster ${keyText(ns, opts.name)}, as Cluster Management's Delete does`,
  );
  await waitFor(s.rancher, {
    type: Resources.provisioningCluster,
    namespace: ns,
    name: opts.name,
    timeoutMs: opts.timeoutMs,
    description: `provisioning Cluster ${keyText(ns, opts.name)} to be deleted`,
    until: (o) => o === undefined,
  });
  say(
    'Rancher',
    `the CAPI Cluster, Machine(s) ${machines.join(', ')} and their HarvesterMachines are gone; each rm job ran once the cleanup controller released its Machine's hook`,
  );
  for (const r of readJobs(s.dir).filter((r) => r.kind === 'rm' && machines.includes(r.machine)))
    say('Rancher', fmt(r));
  const left = await clusterVms(s, opts.name);
  say(
    'Harvester',
    left.length
      ? `VMs of ${opts.name} still there: ${left.map((v) => v.metadata.name).join(', ')}`
      : `no VM of ${opts.name} is left`,
  );
  // The load balancers go once the last VM is gone: wait for the cleanup controller's word.
  const lbEvents = await untilLoadBalancerEvents(s, opts.name, 60_000);
  if (lbEvents.length === 0) say('controller', `no word on the load balancers of ${opts.name} within 60 s`);
  for (const e of lbEvents)
    say('controller', `load balancers of ${opts.name}: [${e.reason ?? ''}] ${e.message ?? ''}`);
  say('sandbox', `guest cluster ${opts.name} deleted (job-logs ${opts.name} shows what its rm jobs printed)`);
}

/** The cleanup controller's Events about a cluster's load balancers (reasons HarvesterLoadBalancer…), once there is one. */
async function untilLoadBalancerEvents(
  s: Session,
  cluster: string,
  timeoutMs: number,
): Promise<Array<{ reason?: string; message?: string }>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await s.rancher.list<KubeObject & { reason?: string; message?: string }>(Resources.event, {
      namespace: s.state.fleetNamespace,
      fieldSelector: `involvedObject.name=${cluster}`,
    });
    const found = events.items.filter((e) => e.reason?.startsWith('HarvesterLoadBalancer'));
    if (found.length > 0 || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function jobLogs(
  s: Session,
  say: Say,
  out: (text: string) => void,
  opts: { cluster: string; wait?: 'failed' | 'succeeded'; timeoutMs: number },
): Promise<void> {
  const mine = (): JobRecord[] =>
    readJobs(s.dir).filter((r) => r.kind === 'rm' && r.cluster === opts.cluster);
  const deadline = Date.now() + opts.timeoutMs;
  const enough = (rs: JobRecord[]): boolean =>
    !opts.wait || rs.some((r) => r.finishedAt && r.ok === (opts.wait === 'succeeded'));
  let runs = mine();
  while (!enough(runs)) {
    if (Date.now() > deadline)
      throw new CommandError(
        `no ${opts.wait ?? ''} rm job of ${opts.cluster} within ${opts.timeoutMs / 1000} s (${runs.length} run(s) so far)`,
      );
    await new Promise((r) => setTimeout(r, 250));
    runs = mine();
  }
  if (runs.length === 0) say('Rancher', `no rm job of ${opts.cluster} has run`);
  for (const r of runs.sort((a, b) => a.startedAt.localeCompare(b.startedAt))) {
    say('Rancher', fmt(r));
    if (r.finishedAt && fs.existsSync(r.log))
      out(`${fs.readFileSync(r.log, 'utf8').trimEnd().replace(/^/gm, '    ')}\n`);
  }
}
