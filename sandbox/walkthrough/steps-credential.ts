// Steps 6-8, the second story (rancher#44912): the cloud credential that a machine was
// created with expires. The user deletes the machine's node (a scale-down); its rm job, built
// with the credential as it is, fails with our clear error and changes nothing; the credential
// is renewed in Rancher, and Rancher's retry of the job removes the old VM with the renewed one.
import { gunzipSync } from 'node:zlib';
import { keyText } from '../../src/api/object-key.js';
import { ANNOTATION_REMOVED_PVCS } from '../../src/harvester/labels.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { untilCredentialRefused } from '../control-plane/access.js';
import { ANNOTATION_DELETE_MACHINE, scaleDownPool } from '../rancher/guest-cluster.js';
import { MACHINE_STATE_KEY, machineStateSecretName, readTar } from '../rancher/machine-state.js';
import { expireRancherToken } from '../rancher/tokens.js';
import type { SandboxRancherToken } from '../sandbox.js';
import { controllerActions, describeRemoval } from './steps-delete.js';
import type { Story } from './story.js';
import { FLEET_NS, tokenNameOf } from './world.js';

/** The kubeconfig saved in the machine's state Secret (config.json's Driver.KubeConfigContent). */
async function savedKubeconfig(
  story: Story,
  machineName: string,
  instanceName: string,
): Promise<string | undefined> {
  const secret = await story.world.sandbox.rancher.admin.find<KubeObject & { data?: Record<string, string> }>(
    Resources.secret,
    { namespace: FLEET_NS, name: machineStateSecretName(machineName) },
  );
  const b64 = secret?.data?.[MACHINE_STATE_KEY];
  if (!b64) return undefined;
  const files = readTar(gunzipSync(Buffer.from(b64, 'base64')));
  const config = Object.entries(files).find(([p]) =>
    p.endsWith(`/machines/${instanceName}/config.json`),
  )?.[1];
  if (!config) return undefined;
  return (JSON.parse(config.toString('utf8')) as { Driver?: { KubeConfigContent?: string } }).Driver
    ?.KubeConfigContent;
}

export async function expireCredential(story: Story, cluster: string): Promise<void> {
  const { world, say } = story;
  const { sandbox } = world;
  const token = sandbox.rancherToken;
  const machine = story.guest(cluster).machines[0];
  if (!machine) throw new Error(`${cluster} has no machine`);
  const saved = await savedKubeconfig(story, machine.name, machine.instanceName);
  say.check(
    tokenNameOf(saved) === token.name,
    `${machineStateSecretName(machine.name)} saved the create job's credential (Rancher token ${token.name}) in config.json`,
  );
  await expireRancherToken(sandbox.rancher.admin, token.name);
  say.say(
    'Rancher',
    `token ${token.name} (user ${token.userId}) expires (as a generated kubeconfig's token does after 30 days by default); the cloud credential ${keyText(sandbox.cloudCredential.namespace, sandbox.cloudCredential.name)} still holds it`,
  );
  const refusal = await untilCredentialRefused(
    sandbox.kubeconfigs.harvesterViaRancher,
    sandbox.seeds.namespace,
    20_000,
  );
  say.say('Rancher', `its /k8s/clusters proxy now treats the token as anonymous: ${refusal.message}`);
  say.check(
    /User "system:unauthenticated"/.test(refusal.message),
    'a request with the saved credential is refused as system:unauthenticated',
  );
}

export async function failingRemoval(story: Story, cluster: string): Promise<number> {
  const { world, say, view } = story;
  const { sandbox } = world;
  const machine = story.guest(cluster).machines[0];
  if (!machine) throw new Error(`${cluster} has no machine`);
  const before = await view.states();
  const t0 = Date.now();
  await scaleDownPool(sandbox.rancher.admin, {
    namespace: FLEET_NS,
    cluster,
    pool: machine.pool,
    machine: machine.name,
  });
  say.say(
    'Rancher',
    `the user deletes ${cluster}'s node ${machine.name}: Rancher marks its Machine ${ANNOTATION_DELETE_MACHINE} and scales MachineDeployment ${cluster}-${machine.pool} down by one; the cluster stays`,
  );
  say.say(
    'CAPI',
    `the MachineSet deletes Machine ${keyText(FLEET_NS, machine.name)}; once released, its HarvesterMachine`,
  );
  const deadline = Date.now() + 60_000;
  let failed = world.removals.find((r) => r.machineName === machine.name && r.result && !r.result.ok);
  while (!failed && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    failed = world.removals.find((r) => r.machineName === machine.name && r.result && !r.result.ok);
  }
  controllerActions(story, [machine.name], ['CleanupGateReleased']);
  if (!failed?.result)
    throw new Error(
      `no failed rm job for ${machine.name} within 60 s (runs: ${world.removals.filter((r) => r.machineName === machine.name).length})`,
    );
  say.say('Rancher', describeRemoval(failed, t0));
  say.say('driver', 'its output (what Rancher shows as "DeleteError: …"):');
  say.quote(failed.result.run.output);
  const out = failed.result.run.output;
  const m = machine.instanceName;
  say.check(
    failed.tokenName === sandbox.rancherToken.name,
    `the job got the expired credential (token ${sandbox.rancherToken.name}) from the cloud credential`,
  );
  say.check(failed.result.run.code === 1, 'rancher-machine rm exits 1');
  say.check(
    out.includes(`Error removing host "${m}": Harvester credential rejected`),
    `"Error removing host "${m}": Harvester credential rejected: …"`,
  );
  say.check(
    /User "system:unauthenticated" cannot get resource "clusters"/.test(out),
    'the error quotes the refusal (system:unauthenticated)',
  );
  say.check(
    out.includes(`Rancher token ${sandbox.rancherToken.name}`) &&
      out.includes('HARVESTER_KUBECONFIG_CONTENT'),
    'the error names the token and where the credential came from',
  );
  say.check(out.includes('Nothing was changed on Harvester.'), 'the error says nothing was changed');
  say.check(
    out.includes('renew the Harvester cloud credential in Rancher'),
    'the error says what to do: renew the cloud credential in Rancher',
  );

  const vm = await view.vm(m);
  say.check(
    vm !== undefined && !vm.metadata.deletionTimestamp && !vm.metadata.annotations?.[ANNOTATION_REMOVED_PVCS],
    `Harvester: VM ${m} untouched (not deleting, no removal recorded on it)`,
  );
  const now = await view.states();
  say.check(
    view.pvcs.every((p) => now.get(p.name) === before.get(p.name)),
    'Harvester: every volume as it was',
  );
  say.check(
    (await savedKubeconfig(story, machine.name, m)) !== undefined,
    `Rancher: ${machineStateSecretName(machine.name)} still holds the machine (the job will be retried)`,
  );
  return t0;
}

export async function renewAndRetry(story: Story, cluster: string, t0: number): Promise<void> {
  const { world, say, view } = story;
  const { sandbox } = world;
  const machine = story.guest(cluster).machines[0];
  if (!machine) throw new Error(`${cluster} has no machine`);
  const before = await view.states();
  const expired = sandbox.rancherToken.name;
  const renewed: SandboxRancherToken = await sandbox.renewCloudCredential();
  say.say(
    'Rancher',
    `Renew (Cluster Management > Cloud Credentials): generateKubeconfig made token ${renewed.name} for the same user ${renewed.userId}, saved into the same credential ${keyText(sandbox.cloudCredential.namespace, sandbox.cloudCredential.name)}; ${expired} stays expired`,
  );
  await waitFor(sandbox.rancher.admin, {
    type: Resources.capiMachine,
    namespace: FLEET_NS,
    name: machine.name,
    timeoutMs: 90_000,
    description: `Machine ${keyText(FLEET_NS, machine.name)} to be removed after the renewal`,
    until: (o) => o === undefined,
  });
  const runs = world.removals.filter((r) => r.machineName === machine.name);
  for (const r of runs) say.say('Rancher', describeRemoval(r, t0));
  const last = runs[runs.length - 1];
  if (last?.result) {
    say.say('driver', `output of attempt ${last.attempt}:`);
    say.quote(last.result.run.output);
  }
  const m = machine.instanceName;
  say.check(
    last?.result?.ok === true && last.tokenName === renewed.name,
    `the retried rm job succeeded with the renewed credential (token ${renewed.name})`,
  );
  say.check(
    runs.slice(0, -1).every((r) => r.result?.ok === false && r.tokenName === expired),
    'every earlier attempt had the expired token and failed',
  );
  const lines = last?.result?.run.stdout.split('\n') ?? [];
  say.check(lines.includes(`Successfully removed ${m}`), `"Successfully removed ${m}"`);
  say.check(
    !lines.some((l) => l.includes('Force the removal')),
    'a plain removal (one node of the cluster): no "Force the removal of all persistent volume claims"',
  );

  const boot = view.of(cluster).filter((p) => p.what.startsWith('boot disk'));
  const workload = view.of(cluster).filter((p) => !p.what.startsWith('boot disk'));
  const left = await view.waitGone(boot.map((p) => p.name));
  const after = await view.states();
  say.say('Harvester', `volumes before and after the retried rm job:`);
  say.table([...story.pvcHeader(), 'before', 'after'], view.rows([before, after]));
  say.check((await view.vm(m)) === undefined, `VM ${m} is gone`);
  say.check(left.length === 0, `its boot disk is gone`, left.join(', '));
  say.check(
    workload.every((p) => after.get(p.name) === 'present'),
    `its hot-plugged workload volume is kept: removing one node keeps data volumes (harvester#3272)`,
  );
}
