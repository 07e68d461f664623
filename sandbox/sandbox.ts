// The whole sandbox: a Harvester (real control plane, KubeVirt's own virt-api and
// virt-controller, stand-in controllers for the rest) and Rancher's local cluster (real control
// plane), the front proxy that plays Rancher's /k8s/clusters/<id> proxy, the objects a machine
// pool refers to, and three credentials:
// - harvesterDirect: a Harvester user's own kubeconfig (proxy URL, bootstrap token that
//   expires when you say), as a Harvester "download kubeconfig" would be;
// - harvesterViaRancher: the kubeconfig Rancher generates for the Harvester cluster
//   (…/k8s/clusters/<clusterId>, Rancher token), also saved as a Harvester cloud credential;
// - rancherLocal: admin of Rancher's local cluster (where the cleanup controller runs).
import { keyText } from '../src/api/object-key.js';
import type { VirtualMachineImage } from '../src/api/harvester.js';
import type { KubeClient } from '../src/kube/client.js';
import { Resources } from '../src/kube/resources.js';
import { waitFor } from '../src/kube/wait.js';
import { ClusterApi, type ClusterApiOptions } from './capi/manager.js';
import { silentLogger, type Logger } from '../src/log/logger.js';
import { CLOUD_CREDENTIAL_NAMESPACE } from '../src/rancher/cloud-credential.js';
import { startControlPlane, type ControlPlane } from './control-plane/control-plane.js';
import { OWN_CAPI_GROUP, installCrds } from './crds/install.js';
import { startHarvester, type HarvesterControlPlane } from './harvester.js';
import type { HarvesterComponents } from './harvester/components.js';
import { HarvesterFaults } from './harvester/faults.js';
import type { KubeVirt } from './kubevirt/kubevirt.js';
import { startFrontProxy, type FrontProxy } from './proxy/front-proxy.js';
import { startImageServer, type ImageServer } from './image-server.js';
import { createRancherCluster } from './rancher/cluster.js';
import { sandboxCredentials, type DirectUser, type SandboxRancherToken } from './sandbox-credentials.js';
import {
  SEED_IMAGE,
  SEED_KEYPAIR,
  SEED_NAMESPACE,
  SEED_NETWORK,
  SEED_STATIC_NETWORK,
  sandboxSshKey,
  seedDriverRoles,
  seedHarvester,
} from './sandbox-seeds.js';
import { discoverSandboxDevices } from './standins/harvester/device-discovery.js';
import { startStandIns, type StandInOptions, type StandIns } from './standins/index.js';
import { ensureDefaultStorageClass } from './standins/storage/longhorn.js';
import { recordSecret } from './secret-ledger.js';

export type { DirectUser, SandboxRancherToken } from './sandbox-credentials.js';

const DAY = 24 * 3_600_000;

export interface SandboxOptions {
  /** The Harvester cluster's id in Rancher (default c-m-sandbox). */
  clusterId?: string;
  /** Its display name in Rancher, which names the kubeconfig's cluster/context (default harvester). */
  clusterName?: string;
  /** Namespaces the sandbox's users may drive machines in (default ["default"]). */
  namespaces?: string[];
  /** Lifetime of the initial direct user's bootstrap token (default 30 days). */
  directUserTtlMs?: number;
  /** TTL of the initial Rancher token (default 30 days, Rancher's kubeconfig default). */
  rancherTokenTtlMs?: number;
  standIns?: Omit<StandInOptions, 'logger'>;
  /**
   * Runs the real Cluster API manager on Rancher's local cluster (sandbox/capi): its CRDs instead
   * of the sandbox's reduced ones. Off by default (true: the default version, all namespaces).
   */
  clusterApi?: boolean | ClusterApiOptions;
  logger?: Logger;
}

export interface Sandbox {
  harvester: ControlPlane;
  rancher: ControlPlane;
  standIns: StandIns;
  /** KubeVirt's own running virt-api and virt-controller. */
  kubevirt: KubeVirt;
  /** Harvester v1.8.0's own running `webhook` and `harvester` (sandbox/harvester). */
  harvesterComponents: HarvesterComponents;
  /** Faults injected into Harvester's own controllers (refused writes, sandbox/harvester/faults.ts). */
  faults: HarvesterFaults;
  /** With SandboxOptions.clusterApi: the running manager. */
  clusterApi: ClusterApi | undefined;
  /** The image download site on 127.0.0.1 the seeded image's URL names. */
  imageServer: ImageServer;
  proxy: FrontProxy;
  clusterId: string;
  kubeconfigs: { harvesterDirect: string; harvesterViaRancher: string; rancherLocal: string };
  directUser: DirectUser;
  rancherToken: SandboxRancherToken;
  /** The Harvester cloud credential in Rancher holding harvesterViaRancher. */
  cloudCredential: { namespace: string; name: string };
  seeds: {
    namespace: string;
    image: string;
    network: string;
    /** A VLAN network with no DHCP (SEED_STATIC_SUBNET's addresses). */
    staticNetwork: string;
    keyPair: string;
    sshPrivateKeyPem: string;
  };
  newDirectUser(opts: { expiresAt: Date; namespaces?: string[] }): Promise<DirectUser>;
  /** A new Rancher token (and kubeconfig) for a Rancher user with the driver's access (a new user by default). */
  newRancherToken(opts: {
    ttlMs: number;
    userId?: string;
    namespaces?: string[];
  }): Promise<SandboxRancherToken>;
  /**
   * Renew in Rancher's UI: a new token for the credential's user, its kubeconfig saved into the
   * same cloud credential (the old token is left as it was). Resolves with the new token.
   */
  renewCloudCredential(opts?: { ttlMs?: number }): Promise<SandboxRancherToken>;
  /** Lets a user (bootstrap system:bootstrap:<id>, or Rancher u-xxxxx) drive machines in more namespaces. */
  grantDriverAccess(username: string, namespaces: string[]): Promise<void>;
  stop(): Promise<void>;
}

type Stops = Array<() => Promise<void>>;

/**
 * Harvester's control plane and Rancher's local cluster, side by side. CRDs go in before each
 * controller manager starts, so its garbage collector knows them. Both are waited for even when
 * one fails, so the other is stopped too, not left running. KubeVirt starts on Harvester's side
 * while Cluster API starts on Rancher's.
 */
async function startControlPlanes(
  opts: SandboxOptions,
  clusterApi: ClusterApi | undefined,
  stops: Stops,
): Promise<{ harvesterPlane: HarvesterControlPlane; rancher: ControlPlane }> {
  const [harvesterStart, rancherStart] = await Promise.allSettled([
    startHarvester({ name: 'harvester' }).then((h) => (stops.push(() => h.stop()), h)),
    startControlPlane({
      name: 'rancher',
      beforeControllerManager: async (admin, pki) => {
        if (!clusterApi) return void (await installCrds(admin, 'rancher'));
        await installCrds(admin, 'rancher', 30_000, { without: [OWN_CAPI_GROUP] });
        await clusterApi.installCrds(admin, pki);
      },
    }).then(async (cp) => {
      stops.push(() => cp.stop());
      if (clusterApi) {
        await clusterApi.start(cp);
        stops.push(() => clusterApi.stop(cp.admin));
      }
      return cp;
    }),
  ]);
  if (harvesterStart.status === 'rejected') throw harvesterStart.reason;
  if (rancherStart.status === 'rejected') throw rancherStart.reason;
  return { harvesterPlane: harvesterStart.value, rancher: rancherStart.value };
}

/**
 * The image is usable once Harvester's own image controller imported it (the stand-ins' idleness
 * does not cover Harvester's work).
 */
async function untilSeedsUsable(admin: KubeClient, standIns: StandIns): Promise<void> {
  await standIns.idle();
  await waitFor<VirtualMachineImage>(admin, {
    type: Resources.virtualMachineImage,
    namespace: SEED_NAMESPACE,
    name: SEED_IMAGE,
    description: `Harvester's image controller to import ${keyText(SEED_NAMESPACE, SEED_IMAGE)}`,
    until: (i) => (i?.status?.conditions ?? []).some((c) => c.type === 'Imported' && c.status === 'True'),
    timeoutMs: 120_000,
  });
}

/** Stops what was started, last first; a failure to stop one is logged and the rest still stop. */
function stopInReverse(stops: Stops, logger: Logger): () => Promise<void> {
  return async () => {
    for (const stop of stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        logger.warn('sandbox: stopping a component failed', { error: (err as Error).message });
      }
    }
  };
}

/** Starts the whole sandbox; stop() stops everything it started, in reverse order. */
export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const logger = opts.logger ?? silentLogger;
  const clusterId = opts.clusterId ?? 'c-m-sandbox';
  const clusterName = opts.clusterName ?? 'harvester';
  const namespaces = opts.namespaces ?? [SEED_NAMESPACE];
  const stops: Stops = [];
  const stopAll = stopInReverse(stops, logger);

  const clusterApi = opts.clusterApi
    ? await ClusterApi.prepare(opts.clusterApi === true ? {} : opts.clusterApi)
    : undefined;
  try {
    const started = Date.now();
    const { harvesterPlane, rancher } = await startControlPlanes(opts, clusterApi, stops);
    const harvester = harvesterPlane.cp;
    logger.info('sandbox: control planes up', { harvester: harvester.server, rancher: rancher.server });
    // The seeded image's URL, served on 127.0.0.1: Harvester's own image controller asks it (HEAD)
    // and the backing-image stand-in downloads it; nothing goes out.
    const imageServer = await startImageServer();
    stops.push(() => imageServer.stop());
    const ssh = sandboxSshKey();
    recordSecret("the sandbox key pair's SSH private key", ssh.privateKeyPem);
    await seedDriverRoles(harvester.admin);
    // The chart's default StorageClass exists before anyone makes an image: Harvester's image
    // mutator refuses an image while no StorageClass is the default.
    await ensureDefaultStorageClass(harvester.admin);
    await discoverSandboxDevices(harvester.admin);
    await createRancherCluster(rancher.admin, { clusterId, displayName: clusterName });

    const standIns = await startStandIns(harvester.admin, {
      networksWithoutDhcp: [keyText(SEED_NAMESPACE, SEED_STATIC_NETWORK)],
      ...opts.standIns,
      virtHandlerClient: harvesterPlane.virtHandlerClient,
      longhornWebhook: harvesterPlane.webhookServing,
      logger,
    });
    stops.push(() => standIns.stop());
    // Seeded once the stand-ins run: Harvester's image controller creates the
    // image's BackingImage at once, which only passes Longhorn's mutator (a stand-in).
    await seedHarvester(harvester.admin, ssh.publicKey, imageServer.seedImageUrl);
    const proxy = await startFrontProxy({ harvester, rancher, clusterId, logger });
    stops.push(() => proxy.stop());

    const cloudCredential = { namespace: CLOUD_CREDENTIAL_NAMESPACE, name: 'cc-harvester-sandbox' };
    const credentials = sandboxCredentials({
      harvesterAdmin: harvester.admin,
      rancherAdmin: rancher.admin,
      proxy,
      clusterId,
      clusterName,
      namespaces,
      cloudCredentialName: cloudCredential.name,
    });
    const directUser = await credentials.newDirectUser({
      expiresAt: new Date(Date.now() + (opts.directUserTtlMs ?? 30 * DAY)),
    });
    const rancherToken = await credentials.newRancherToken({ ttlMs: opts.rancherTokenTtlMs ?? 30 * DAY });
    await credentials.saveCloudCredential(rancherToken);
    await untilSeedsUsable(harvester.admin, standIns);
    const components = harvesterPlane.components;
    const asHarvester = await components.asHarvester();
    stops.push(() => Promise.resolve(asHarvester.close()));
    logger.info('sandbox: up', { proxy: proxy.url, clusterId, seconds: (Date.now() - started) / 1000 });

    return {
      harvester,
      rancher,
      standIns,
      kubevirt: harvesterPlane.kubevirt,
      harvesterComponents: components,
      faults: new HarvesterFaults(harvester.admin, asHarvester),
      clusterApi,
      imageServer,
      proxy,
      clusterId,
      kubeconfigs: {
        harvesterDirect: directUser.kubeconfig,
        harvesterViaRancher: rancherToken.kubeconfig,
        rancherLocal: rancher.adminKubeconfig,
      },
      directUser,
      rancherToken,
      cloudCredential,
      seeds: {
        namespace: SEED_NAMESPACE,
        image: SEED_IMAGE,
        network: SEED_NETWORK,
        staticNetwork: SEED_STATIC_NETWORK,
        keyPair: SEED_KEYPAIR,
        sshPrivateKeyPem: ssh.privateKeyPem,
      },
      newDirectUser: credentials.newDirectUser,
      newRancherToken: credentials.newRancherToken,
      renewCloudCredential: async (o = {}) => {
        const renewed = await credentials.newRancherToken({
          ttlMs: o.ttlMs ?? opts.rancherTokenTtlMs ?? 30 * DAY,
          userId: rancherToken.userId,
        });
        await credentials.saveCloudCredential(renewed);
        return renewed;
      },
      grantDriverAccess: credentials.grantDriverAccess,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
