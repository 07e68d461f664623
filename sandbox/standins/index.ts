// What cannot run here of a Harvester cluster, played on top of a real kube-apiserver beside
// Harvester's own webhook and controllers (sandbox/harvester) and KubeVirt's own virt-api and
// virt-controller (sandbox/kubevirt): Harvester's load balancer controller, the pcidevices and
// vm-dhcp-controller add-ons, Longhorn (provisioning, backing images, its BackingImage mutator),
// the CSI driver's calls, and what a node does: the kubelet and virt-handler (node/). Each is
// listed with the upstream source it follows in sandbox/standins/README.md.
import type { KubeClient } from '../../src/kube/client.js';
import { Manager } from '../../src/kube/manager.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import { DEFAULT_DELAYS, type Behaviour, type Delays, type StandInContext, type VmRef } from './context.js';
import type { WebhookServing } from './admission-webhook.js';
import { csiStandIn, type CsiStandIn } from './csi/csi.js';
import { pciDevicesStandIn } from './harvester/pcidevices-controller.js';
import { loadBalancerControllers } from './harvester/load-balancer-controller.js';
import { vmDhcpControllers } from './harvester/vm-dhcp-controller.js';
import { kubelet } from './node/kubelet.js';
import { nodeController } from './node/node-controller.js';
import { virtHandler } from './node/virt-handler.js';
import { backingImageStandIn } from './storage/backing-images.js';
import { cdiStorageProfiles } from './storage/cdi-storage-profiles.js';
import { longhornMutatingWebhook } from './storage/longhorn-webhook.js';
import { ensureDefaultStorageClass, longhornBinder } from './storage/longhorn.js';

export type { CreateVolumeRequest, CsiStandIn, HotplugRequest } from './csi/csi.js';
export type { Delays, VmRef } from './context.js';
export type { WebhookServing } from './admission-webhook.js';

export interface StandInOptions {
  delays?: Partial<Delays>;
  /** Per-VM behaviour decided out of band (never by a marker on the objects): no IP ever for some VMs. */
  noIp?: (vm: VmRef) => boolean;
  /** VLAN networks ("namespace/name") without DHCP: a guest there has only the address its network data gives. */
  networksWithoutDhcp?: readonly string[];
  /**
   * KubeVirt's virt-api and virt-controller run beside (sandbox/kubevirt): the node stand-in
   * plays the rest, writing VMIs with this client (virt-handler's service account). Without it
   * nothing runs VMs.
   */
  virtHandlerClient?: KubeClient;
  /**
   * Serves and registers Longhorn's BackingImage mutator (storage/longhorn-webhook.ts) with this
   * certificate for 127.0.0.1; without it Longhorn's CRD refuses the BackingImages Harvester's
   * image controller makes.
   */
  longhornWebhook?: WebhookServing;
  logger?: Logger;
}

export interface StandIns {
  /** Changes delays etc. at runtime; VMIs waiting out a delay re-evaluate at once. */
  configure(options: Partial<StandInOptions>): void;
  csi: CsiStandIn;
  /** Resolves once every controller queue has drained and stayed drained briefly (tests). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

/** A stand-in's queues retry fast: a test waits on what they do. */
const QUEUE_OPTIONS = { baseDelayMs: 100, maxDelayMs: 5_000, concurrency: 4 };
/** How long the queues must stay drained for the stand-ins to count as idle. */
const QUIET_MS = 150;

export async function startStandIns(admin: KubeClient, options: StandInOptions = {}): Promise<StandIns> {
  const logger = options.logger ?? silentLogger;
  // A silent stream may be half-open (apiserver gone without a FIN): resume it after 60 s.
  const manager = new Manager({
    client: admin,
    logger,
    informerIdleTimeoutMs: 60_000,
    queueDefaults: QUEUE_OPTIONS,
  });
  const behaviour: Behaviour = {
    delays: { ...DEFAULT_DELAYS, ...options.delays },
    noIp: options.noIp ?? (() => false),
    networksWithoutDhcp: options.networksWithoutDhcp ?? [],
  };
  const ctx: StandInContext = {
    client: admin,
    logger,
    manager,
    behaviour,
    kubevirt: options.virtHandlerClient !== undefined,
  };

  const devices = pciDevicesStandIn(ctx);
  backingImageStandIn(ctx);
  longhornBinder(ctx);
  cdiStorageProfiles(ctx);
  loadBalancerControllers(ctx);
  vmDhcpControllers(ctx);
  const webhook = options.longhornWebhook ? longhornMutatingWebhook(ctx, options.longhornWebhook) : undefined;
  const handler = options.virtHandlerClient ? virtHandler(ctx, options.virtHandlerClient) : undefined;
  if (handler) {
    nodeController(ctx, devices.offer);
    kubelet(ctx);
  }

  await ensureDefaultStorageClass(admin);
  try {
    await manager.start();
    await webhook?.start();
  } catch (err) {
    await webhook?.stop();
    await manager.stop();
    throw err;
  }
  logger.info('stand-in controllers started', { controllers: manager.controllers.map((c) => c.name) });

  return {
    configure(change) {
      if (change.delays) behaviour.delays = { ...behaviour.delays, ...change.delays };
      if (change.noIp) behaviour.noIp = change.noIp;
      if (change.networksWithoutDhcp) behaviour.networksWithoutDhcp = change.networksWithoutDhcp;
      // VMIs sleeping out the old delays look again with the new ones.
      handler?.requeueAll();
    },
    csi: csiStandIn(admin),
    idle: () => manager.settled(QUIET_MS),
    async stop() {
      await webhook?.stop();
      await manager.stop();
      logger.info('stand-in controllers stopped');
    },
  };
}
