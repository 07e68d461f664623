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
import { Narrator } from './narrator.js';
import { attachVolumes, provisionClusters, startRancherSide } from './steps-provision.js';
import { deleteWholeCluster } from './steps-delete.js';
import { checkAddressesFreed, checkFixedAddresses, fixedAddressPool } from './steps-addresses.js';
import { checkGpuMachines, enableGpuPassthrough, gpuPool } from './steps-devices.js';
import { checkLoadBalancers, makeLoadBalancers, type GuestLoadBalancers } from './steps-load-balancers.js';
import { expireCredential, failingRemoval, renewAndRetry } from './steps-credential.js';
import { introduce, startTheSandbox, stopEverything } from './steps-sandbox.js';
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

/** Starts the sandbox and tells both stories on it, each step timed and checked. */
async function tellStories(story: Story): Promise<void> {
  const { world, say } = story;
  introduce(say);
  await say.step('Start the sandbox', () => startTheSandbox(story));
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
}

/** Runs the walkthrough, writing its lines to `write`; everything is stopped at the end or on interrupt. */
export function runWalkthrough(write?: (line: string) => void): WalkthroughRun {
  const say = new Narrator(STEPS, write);
  const world = new World();
  const story = new Story(world, say);
  let interrupted = false;

  const done = (async (): Promise<number> => {
    let ok = true;
    try {
      await tellStories(story);
    } catch {
      // The step printed what failed; everything is still stopped below.
      ok = false;
    }
    if (interrupted) return 130;
    try {
      await say.step('Stop everything', () => stopEverything(world, say));
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
