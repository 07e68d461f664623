// Steps 1 and 11: the sandbox comes up and says what runs, and at the end everything stops.
import { keyText } from '../../src/api/object-key.js';
import type { Narrator } from './narrator.js';
import { HarvesterView } from './harvester-view.js';
import type { Story } from './story.js';
import type { World } from './world.js';

/** The walkthrough's opening lines: what runs. */
export function introduce(say: Narrator): void {
  say.line('harvester-machine walkthrough: the Harvester node driver as Rancher drives it, on the sandbox');
  say.line(
    "(real kube-apiservers for Harvester and for Rancher's local cluster, the real Cluster API controller-manager;",
  );
  say.line(
    " Harvester v1.8.0's own webhook and controllers; stand-ins for Longhorn, Harvester's add-ons and Rancher's",
  );
  say.line(' own controllers; the real rancher-machine CLI driving our');
  say.line(' single-executable plugin; our cleanup controller as its own process)');
}

/** Starts the sandbox and tells what it runs: Harvester's side, Rancher's side, the jobs' binaries. */
export async function startTheSandbox(story: Story): Promise<void> {
  const { world, say } = story;
  await world.startSandbox((line) => say.say('build', line));
  const { sandbox } = world;
  story.view = new HarvesterView(sandbox.harvester.admin, sandbox.seeds.namespace);
  say.say(
    'Harvester',
    `kube-apiserver ${sandbox.harvester.server} + KubeVirt ${sandbox.kubevirt?.version ?? '(not run)'} (virt-api, virt-controller) + Harvester ${sandbox.harvesterComponents.build.version}'s own webhook and controllers + stand-ins (KubeVirt's node, Harvester's add-ons, Longhorn, CSI); image ${sandbox.seeds.image}, network ${sandbox.seeds.network}`,
  );
  const own = sandbox.harvesterComponents;
  if (own.startTimes) {
    const rss = Object.entries(own.rssKb())
      .map(([name, kb]) => `${name} ${Math.round(kb / 1024)} MiB`)
      .join(', ');
    say.say(
      'Harvester',
      `its own webhook registered in ${(own.startTimes.webhookReadyMs / 1000).toFixed(1)} s, its controllers leading in ${(own.startTimes.harvesterLeadingMs / 1000).toFixed(1)} s; resident: ${rss}`,
    );
  }
  say.say(
    'Rancher',
    `local cluster ${sandbox.rancher.server}; Harvester imported as ${sandbox.clusterId}, reached at ${sandbox.proxy.url}/k8s/clusters/${sandbox.clusterId}`,
  );
  say.say(
    'Rancher',
    `cloud credential ${keyText(sandbox.cloudCredential.namespace, sandbox.cloudCredential.name)}: a generated kubeconfig with token ${sandbox.rancherToken.name}, expires ${sandbox.rancherToken.expiresAt?.toISOString() ?? 'never'}`,
  );
  say.say('jobs', `rancher-machine ${world.binaries.rancherMachine}`);
  say.say('jobs', `plugin executable ${world.binaries.plugin}`);
  say.say(
    'jobs',
    `work directory ${world.dir} (each job's "pod": bin/, an empty home/, tmp/; removed at the end)`,
  );
}

/** Stops Rancher's stand-in, the cleanup controller and the sandbox, and checks nothing is left behind. */
export async function stopEverything(world: World, say: Narrator): Promise<void> {
  if (await world.stopStandIn()) say.say('Rancher', "Rancher's stand-in stopped");
  const exit = await world.stopController();
  if (exit !== undefined)
    say.check(exit === 0, `cleanup controller stopped on SIGTERM (exit ${String(exit)})`);
  if (await world.stopSandbox())
    say.say(
      'sandbox',
      'Cluster API manager, Harvester and Rancher control planes, stand-ins and front proxy stopped',
    );
  const leftovers = world.leftoverPlugins();
  await world.stop();
  say.check(leftovers === 0, 'no plugin process left behind; temp directory removed');
}
