// Step 3's checks: each create job ran cleanly, each machine's state Secret holds its files,
// each VM runs with an address, and the cleanup controller hooked every Machine.
import { gunzipSync } from 'node:zlib';
import { hookAnnotation, DEFAULT_HOOK_NAME } from '../../src/controller/constants.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import type { GuestMachine } from '../rancher/guest-cluster.js';
import { MACHINE_STATE_KEY, machineStateSecretName, readTar } from '../rancher/machine-state.js';
import { redactArgs, runProblem } from '../rancher-machine/rancher-machine.js';
import type { Story } from './story.js';
import { FLEET_NS } from './world.js';

/** The cleanup controller's pre-terminate hook annotation on a Machine. */
export const HOOK = hookAnnotation(DEFAULT_HOOK_NAME);

/** A provisioned machine with its guest cluster's name. */
export interface ProvisionedMachine {
  cluster: string;
  machine: GuestMachine;
}

async function stateSecretEntries(story: Story, machineName: string): Promise<string[]> {
  const secret = await story.world.sandbox.rancher.admin.get<KubeObject & { data?: Record<string, string> }>(
    Resources.secret,
    { namespace: FLEET_NS, name: machineStateSecretName(machineName) },
  );
  const b64 = secret.data?.[MACHINE_STATE_KEY];
  return b64 ? Object.keys(readTar(gunzipSync(Buffer.from(b64, 'base64')))) : [];
}

/** Shows the first create job's command line and output, and checks each job exited cleanly. */
export function checkCreateJobs(story: Story, all: ProvisionedMachine[]): void {
  const { world, say } = story;
  const results = all.map(({ machine }) => world.creates.find((c) => c.machineName === machine.name)?.result);
  const firstCreate = world.creates.find((c) => all.some(({ machine }) => machine.name === c.machineName));
  say.say(
    'Rancher',
    `${all.length} create jobs ran at once, each from an empty home, environment from the cloud credential (${firstCreate?.envNames.join(', ') ?? 'none'})`,
  );
  const first = results[0];
  if (first) {
    say.say('Rancher', `the create job's command line (${all[0]?.machine.name}):`);
    say.quote(`rancher-machine ${redactArgs(first.args)}`);
    say.say(
      'driver',
      'its output: rancher-machine\'s lines and our plugin\'s "(<machine>) …" lines. The "option  which does not exist" warnings are rancher-machine\'s own, printed for the Go driver too: with --custom-install-script it looks up the driver\'s "-os" flag, and the Harvester driver has none.',
    );
    say.quote(first.run.output);
  }
  for (const [i, { machine }] of all.entries()) {
    const run = results[i]?.run;
    if (!run) {
      say.check(false, `create job ${machine.name} ran`);
      continue;
    }
    const problem = runProblem(run);
    say.check(
      problem === undefined,
      `create job ${machine.name} exits 0 and leaves no plugin process (took ${(run.durationMs / 1000).toFixed(1)} s)`,
      `${problem ?? ''}\n${run.output}`,
    );
  }
}

/** Checks each machine's state Secret holds its config and keys, and tracks its boot disks. */
export async function checkMachineStates(story: Story, all: ProvisionedMachine[]): Promise<void> {
  const { say, view } = story;
  for (const { cluster, machine } of all) {
    const entries = await stateSecretEntries(story, machine.name);
    const files = ['config.json', 'id_rsa', 'id_rsa.pub'].filter((f) =>
      entries.some((e) => e.endsWith(`/machines/${machine.instanceName}/${f}`)),
    );
    say.check(
      files.length === 3,
      `${machineStateSecretName(machine.name)} now holds machines/${machine.instanceName}/{${files.join(',')}}`,
    );
    await view.trackBootDisks(machine.instanceName, cluster);
  }
}

/** Shows Harvester's VMs and checks each machine's is Running with an IP. */
export async function checkVmsRunning(story: Story, all: ProvisionedMachine[]): Promise<void> {
  const { say, view } = story;
  const vms = await view.vms();
  say.say('Harvester', 'virtual machines:');
  say.table(
    ['VM', 'guest cluster', 'phase', 'IP'],
    vms.map((v) => [v.name, v.cluster, v.phase, v.ip]),
  );
  for (const { machine } of all) {
    const vm = vms.find((v) => v.name === machine.instanceName);
    say.check(vm?.phase === 'Running' && vm.ip !== '', `VM ${machine.instanceName} is Running with an IP`);
  }
}

/** Checks the cleanup controller put its pre-terminate hook on every Machine. */
export async function checkPreTerminateHooks(story: Story, all: ProvisionedMachine[]): Promise<void> {
  const { say } = story;
  const { sandbox } = story.world;
  for (const { machine } of all) {
    await waitFor(sandbox.rancher.admin, {
      type: Resources.capiMachine,
      namespace: FLEET_NS,
      name: machine.name,
      timeoutMs: 15_000,
      description: `the cleanup controller's hook on Machine ${machine.name}`,
      until: (m) => m?.metadata.annotations?.[HOOK] !== undefined,
    }).catch(() => undefined);
  }
  const machines = await sandbox.rancher.admin.list<KubeObject>(Resources.capiMachine, {
    namespace: FLEET_NS,
  });
  const hooked = machines.items.filter((m) => m.metadata.annotations?.[HOOK] !== undefined).length;
  say.check(
    hooked === all.length,
    `the cleanup controller put its pre-terminate hook on all ${all.length} Machines (${hooked})`,
  );
}
