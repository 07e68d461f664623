// Step 5, the first story (harvester#2825): a whole guest cluster is deleted the way
// Rancher does it, and every volume of it goes, while another cluster is left alone.
// Rancher deletes the provisioning Cluster → Rancher's stand-in deletes the CAPI Cluster →
// Cluster API deletes its MachineDeployment, MachineSet and Machines, each waiting at its
// pre-terminate hook → our controller annotates each VM and releases the hook → Cluster API
// deletes each HarvesterMachine → Rancher's rm job (rancher-machine + our plugin).
import { keyText } from '../../src/api/object-key.js';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { HOOK } from './steps-provision.js';
import type { Story } from './story.js';
import { FLEET_NS, type RemovalRecord } from './world.js';

const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The controller's log lines about these Machines that record an Event (what it did, and why). */
export function controllerActions(story: Story, machineNames: string[], events: string[]): void {
  for (const line of story.world.controller.lines()) {
    if (!line.event || !events.includes(line.event)) continue;
    const machine = machineNames.find((m) => line.object === `Machine ${keyText(FLEET_NS, m)}`);
    if (machine) story.say.say('controller', `${machine}: [${line.event}] ${line.msg}`);
  }
}

export function describeRemoval(r: RemovalRecord, t0: number): string {
  const run = r.result?.run;
  const outcome = !run
    ? 'still running'
    : run.code === 0
      ? 'exit 0'
      : `exit ${run.code ?? run.signal ?? '?'}`;
  return `rm job ${r.machineName}, attempt ${r.attempt}, started at +${secs(r.startedAt - t0)}, credential token ${r.tokenName ?? '(none)'}, VM annotation ${ANNOTATION_REMOVE_ALL_PVCS}=${r.annotationAtStart ?? '(absent)'} when it started → ${outcome}${run ? ` in ${secs(run.durationMs)}` : ''}`;
}

export async function deleteWholeCluster(story: Story, name: string, other: string): Promise<void> {
  const { world, say, view } = story;
  const { rancher } = world.sandbox;
  const guest = story.guest(name);
  const names = guest.machines.map((m) => m.name);
  const before = await view.states();
  const t0 = Date.now();
  await rancher.admin.delete(Resources.provisioningCluster, { namespace: FLEET_NS, name });
  say.say(
    'Rancher',
    `DELETE provisioning Cluster ${keyText(FLEET_NS, name)} (the user deletes the cluster in Cluster Management)`,
  );
  await waitFor(rancher.admin, {
    type: Resources.provisioningCluster,
    namespace: FLEET_NS,
    name,
    timeoutMs: 180_000,
    description: `provisioning Cluster ${keyText(FLEET_NS, name)} to be deleted`,
    until: (o) => o === undefined,
  });
  say.say(
    'CAPI',
    `Cluster API deleted the CAPI Cluster, its MachineDeployment, MachineSet and ${names.length} Machines; each Machine waited at Cluster API's pre-terminate step until our hook was released; the provisioning Cluster was gone after ${secs(Date.now() - t0)}`,
  );
  controllerActions(story, names, [
    'HarvesterVMAnnotated',
    'HarvesterVMAlreadyAnnotated',
    'CleanupGateReleased',
    'CleanupGateDeadlineExceeded',
  ]);

  const runs = world.removals.filter((r) => names.includes(r.machineName));
  for (const r of runs) say.say('Rancher', describeRemoval(r, t0));
  const shown = runs.find((r) => r.result?.ok);
  if (shown?.result) {
    say.say('driver', `output of the rm job for ${shown.machineName} (what Rancher shows in the job's log):`);
    say.quote(shown.result.run.output);
  }
  for (const m of guest.machines) {
    const mine = runs.filter((r) => r.machineName === m.name);
    const ok = mine.find((r) => r.result?.ok);
    const lines = ok?.result?.run.stdout.split('\n') ?? [];
    say.check(
      mine.length > 0 && mine.every((r) => r.annotationAtStart === 'true'),
      `${m.instanceName} was annotated ${ANNOTATION_REMOVE_ALL_PVCS}: "true" before its rm job started`,
    );
    say.check(
      ok !== undefined &&
        lines.includes(`(${m.instanceName}) Force the removal of all persistent volume claims`),
      `rm job ${m.instanceName}: "(${m.instanceName}) Force the removal of all persistent volume claims"`,
      mine.map((r) => r.result?.run.output ?? '').join('\n'),
    );
    say.check(
      lines.includes(`Successfully removed ${m.instanceName}`),
      `rm job ${m.instanceName}: "Successfully removed ${m.instanceName}"`,
    );
  }

  const mine = view.of(name).map((p) => p.name);
  const left = await view.waitGone(mine);
  const after = await view.states();
  say.say('Harvester', `volumes before and after deleting ${name}:`);
  say.table([...story.pvcHeader(), 'before', 'after'], view.rows([before, after]));
  const vms = await view.vms();
  say.check(!vms.some((v) => v.cluster === name), `no VM of ${name} is left on Harvester`);
  say.check(
    left.length === 0,
    `every volume of ${name} is gone (${mine.length - left.length}/${mine.length}: boot disks, hot-plugged, labelled unattached)`,
    left.join(', '),
  );

  const others = view.of(other);
  say.check(
    others.every((p) => after.get(p.name) === 'present'),
    `every volume of ${other} is untouched (${others.length})`,
  );
  const otherVms = vms.filter((v) => v.cluster === other);
  say.check(
    otherVms.length === story.guest(other).machines.length &&
      otherVms.every((v) => v.phase === 'Running' && !v.deleting),
    `${other}'s VM(s) still Running`,
  );
  const machines = await rancher.admin.list<KubeObject>(Resources.capiMachine, { namespace: FLEET_NS });
  const hms = await rancher.admin.list<KubeObject>(Resources.harvesterMachine, { namespace: FLEET_NS });
  say.check(
    !machines.items.some((m) => names.includes(m.metadata.name)) &&
      !hms.items.some((m) => names.includes(m.metadata.name)),
    `Rancher: no Machine or HarvesterMachine of ${name} is left`,
  );
  const otherMachines = story.guest(other).machines.map((m) => m.name);
  say.check(
    machines.items.filter(
      (m) =>
        otherMachines.includes(m.metadata.name) &&
        m.metadata.annotations?.[HOOK] &&
        !m.metadata.deletionTimestamp,
    ).length === otherMachines.length,
    `Rancher: ${other}'s Machine(s) untouched, still gated by the hook`,
  );
}
