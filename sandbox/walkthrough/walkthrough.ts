// The walkthrough: the two stories this project exists for, told on the sandbox with the
// real pieces (Cluster API's own controller-manager, rancher-machine driving our plugin
// executable with Rancher's job argv and state Secrets, our cleanup controller as its own
// process), each step timed and checked.
// 1. sandbox up  2. Rancher's side  3. two clusters provisioned (harv01's with fixed addresses on a
//    VLAN without DHCP, harv02's with a GPU)  4. workload volumes
// 5. the cloud providers make load balancers (a Harvester that leaves them)
// 6. harv01 deleted as Rancher does: all its volumes gone, harv02 untouched
// 7. harv01's load balancer gone, its address free; harv02's stays
// 8. harv02's credential expires  9. its node is deleted: the rm job fails clearly, nothing changed
// 10. credential renewed: the retried rm job removes the old VM  11. everything stopped
import { HarvesterView } from './harvester-view.js';
import { Narrator } from './narrator.js';
import { attachVolumes, provisionClusters, startRancherSide } from './steps-provision.js';
import { deleteWholeCluster } from './steps-delete.js';
import { checkAddressesFreed, checkFixedAddresses, fixedAddressPool } from './steps-addresses.js';
import { checkGpuMachines, enableGpuPassthrough, gpuPool } from './steps-devices.js';
import { checkLoadBalancers, makeLoadBalancers, type GuestLoadBalancers } from './steps-load-balancers.js';
import { expireCredential, failingRemoval, renewAndRetry } from './steps-credential.js';
import { Story } from './story.js';
import { World } from './world.js';

const DELETED = 'harv01';
const KEPT = 'harv02';
/**
 * Pause between runs of a failed rm job. Kubernetes' Job backoff starts at 10 s; here it
 * must only leave time to show the failure and renew before the next attempt.
 */
const RM_RETRY_DELAY_MS = 5_000;
const STEPS = 11;

export interface WalkthroughRun {
  /** Resolves with the exit code: 0 when every check passed. */
  done: Promise<number>;
  /** Stops everything now (Ctrl-C); resolves when stopped. */
  interrupt(signal: string): Promise<void>;
}

export interface WalkthroughOptions {
  /**
   * Harvester v1.8.0's own webhook and controllers serve the sandbox (default true); false: the
   * stand-ins that play them (docs/decisions/0023-harvester-in-the-sandbox.md).
   */
  ownHarvester?: boolean;
}

export function runWalkthrough(
  write?: (line: string) => void,
  opts: WalkthroughOptions = {},
): WalkthroughRun {
  const ownHarvester = opts.ownHarvester !== false;
  const say = new Narrator(STEPS, write);
  const world = new World();
  const story = new Story(world, say);
  let interrupted = false;

  const stories = async (): Promise<void> => {
    say.line('harvester-machine walkthrough: the Harvester node driver as Rancher drives it, on the sandbox');
    say.line(
      "(real kube-apiservers for Harvester and for Rancher's local cluster, the real Cluster API controller-manager;",
    );
    say.line(
      ownHarvester
        ? " Harvester v1.8.0's own webhook and controllers; stand-ins for Longhorn, Harvester's add-ons and Rancher's"
        : " stand-ins for Harvester's and Rancher's own controllers; the real rancher-machine CLI driving our",
    );
    if (ownHarvester) say.line(' own controllers; the real rancher-machine CLI driving our');
    say.line(' single-executable plugin; our cleanup controller as its own process)');

    await say.step('Start the sandbox', async () => {
      await world.startSandbox((line) => say.say('build', line), ownHarvester);
      const { sandbox } = world;
      story.view = new HarvesterView(sandbox.harvester.admin, sandbox.seeds.namespace);
      say.say(
        'Harvester',
        `kube-apiserver ${sandbox.harvester.server} + KubeVirt ${sandbox.kubevirt?.version ?? '(not run)'} (virt-api, virt-controller) + ${sandbox.harvesterComponents ? `Harvester ${sandbox.harvesterComponents.build.version}'s own webhook and controllers + stand-ins (KubeVirt's node, Harvester's add-ons, Longhorn, CSI)` : "stand-ins (KubeVirt's node, Harvester, Longhorn, CSI)"}; image ${sandbox.seeds.image}, network ${sandbox.seeds.network}`,
      );
      const own = sandbox.harvesterComponents;
      if (own?.startTimes) {
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
        `cloud credential ${sandbox.cloudCredential.namespace}/${sandbox.cloudCredential.name}: a generated kubeconfig with token ${sandbox.rancherToken.name}, expires ${sandbox.rancherToken.expiresAt?.toISOString() ?? 'never'}`,
      );
      say.say('jobs', `rancher-machine ${world.binaries.rancherMachine}`);
      say.say('jobs', `plugin executable ${world.binaries.plugin}`);
      say.say(
        'jobs',
        `work directory ${world.dir} (each job's "pod": bin/, an empty home/, tmp/; removed at the end)`,
      );
    });
    await say.step("Start Rancher's side: its stand-in beside Cluster API, and our cleanup controller", () =>
      startRancherSide(story, RM_RETRY_DELAY_MS),
    );
    await say.step(
      `Rancher provisions ${DELETED} (3 machines with fixed addresses on a VLAN without DHCP) and ${KEPT} (1 machine with a passed-through GPU) through rancher-machine and our plugin`,
      async () => {
        await enableGpuPassthrough(story);
        await provisionClusters(story, [
          { name: DELETED, quantity: 3, machineConfig: fixedAddressPool(world.sandbox.seeds.namespace) },
          { name: KEPT, quantity: 1, machineConfig: gpuPool() },
        ]);
        await checkFixedAddresses(story, DELETED);
        await checkGpuMachines(story, KEPT);
      },
    );
    await say.step('Workloads claim volumes (Harvester CSI driver)', () =>
      attachVolumes(story, [
        { cluster: DELETED, sizes: ['2Gi', '5Gi', '1Gi'], unattached: '3Gi' },
        { cluster: KEPT, sizes: ['2Gi'] },
      ]),
    );
    let lbs: GuestLoadBalancers = new Map();
    await say.step("The guest clusters' cloud providers make load balancers on Harvester", async () => {
      lbs = await makeLoadBalancers(story, [
        { cluster: DELETED, service: 'nginx' },
        { cluster: KEPT, service: 'web' },
      ]);
    });
    await say.step(`Delete ${DELETED} the way Rancher does`, async () => {
      await deleteWholeCluster(story, DELETED, KEPT);
      await checkAddressesFreed(story, DELETED);
    });
    await say.step(`${DELETED}'s load balancer goes with it; ${KEPT}'s stays`, () =>
      checkLoadBalancers(story, lbs, DELETED, KEPT),
    );
    await say.step(`${KEPT}'s cloud credential expires`, () => expireCredential(story, KEPT));
    const t0 = await say.step(
      `The user deletes ${KEPT}'s node: the rm job fails without a renewed credential`,
      () => failingRemoval(story, KEPT),
    );
    await say.step('The credential is renewed in Rancher: the retried rm job removes the old VM', () =>
      renewAndRetry(story, KEPT, t0),
    );
  };

  const stopAll = async (): Promise<void> => {
    await say.step('Stop everything', async () => {
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
    });
  };

  const done = (async (): Promise<number> => {
    let ok = true;
    try {
      await stories();
    } catch {
      // The step printed what failed; everything is still stopped below.
      ok = false;
    }
    if (interrupted) return 130;
    try {
      await stopAll();
    } catch {
      ok = false;
    } finally {
      await world.stop();
    }
    if (interrupted) return 130;
    say.summary(ok);
    return ok ? 0 : 1;
  })();

  return {
    done,
    interrupt: async (signal) => {
      if (interrupted) return;
      interrupted = true;
      say.mute();
      say.announce('');
      say.announce(`walkthrough: ${signal}: stopping everything…`);
      await world.stop();
      say.announce('walkthrough: stopped.');
    },
  };
}
