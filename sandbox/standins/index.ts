// The controllers a real Harvester runs, played on top of a real kube-apiserver: Harvester's
// VM, PVC, VMI-network, KeyPair, image and load balancer controllers, the pcidevices and
// vm-dhcp-controller add-ons, Longhorn's provisioning, the CSI driver's calls, and, beside
// KubeVirt's own virt-api and virt-controller (sandbox/kubevirt), what its node does: the
// kubelet and virt-handler (node/). See docs/upstream/harvester-kubevirt.md and
// docs/upstream/kubevirt.md.
import type { KubeClient } from '../../src/kube/client.js';
import { Manager } from '../../src/kube/manager.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import {
  DEFAULT_DELAYS,
  Faults,
  type Behaviour,
  type Delays,
  type StandInContext,
  type VmRef,
} from './context.js';
import { csiStandIn, type CsiStandIn } from './csi/csi.js';
import { harvesterPvcController } from './harvester/pvc-controller.js';
import { imageController } from './harvester/image-controller.js';
import { keyPairController } from './harvester/keypair-controller.js';
import { pciDevicesStandIn } from './harvester/pcidevices-controller.js';
import { loadBalancerControllers } from './harvester/load-balancer-controller.js';
import { harvesterVmController } from './harvester/vm-controller.js';
import { pvcDeletionWebhook, type WebhookServing } from './harvester/pvc-webhook.js';
import { vmiNetworkController } from './harvester/vmi-network-controller.js';
import { vmDhcpControllers } from './harvester/vm-dhcp-controller.js';
import { kubelet } from './node/kubelet.js';
import { nodeController } from './node/node-controller.js';
import { virtHandler } from './node/virt-handler.js';
import { backingImageStandIn } from './storage/backing-images.js';
import { longhornMutatingWebhook } from './storage/longhorn-webhook.js';
import { ensureDefaultStorageClass, longhornBinder } from './storage/longhorn.js';

export type { CreateVolumeRequest, CsiStandIn, HotplugRequest } from './csi/csi.js';
export type { Delays, VmRef } from './context.js';
export type { WebhookServing } from './harvester/pvc-webhook.js';

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
   * Serves and registers Harvester's PVC deletion webhook (harvester/pvc-webhook.ts) with this
   * certificate for 127.0.0.1; without it no webhook refuses a PVC deletion. With ownHarvester:
   * Longhorn's BackingImage mutator instead (storage/longhorn-webhook.ts).
   */
  harvesterWebhook?: WebhookServing;
  /**
   * Harvester's own `webhook` and `harvester` run (sandbox/harvester): the stand-ins they replace
   * are not started (the VM, PVC, VMI-network, KeyPair and image controllers, the PVC webhook),
   * and Longhorn's backing images are played instead of the image controller (storage/backing-images.ts).
   */
  ownHarvester?: boolean;
  logger?: Logger;
}

export interface StandIns {
  /** Changes delays etc. at runtime; VMIs waiting out a delay re-evaluate at once. */
  configure(options: Partial<StandInOptions>): void;
  faults: {
    /** Harvester's VM OnRemove handler fails for this VM until released: it stays Terminating. */
    holdRemoval(namespace: string, vmName: string): void;
    releaseRemoval(namespace: string, vmName: string): void;
    /** Harvester's VM controller ignores this VM from now on (no PVC creation, no cleanup finalizer work). */
    forgetVm(namespace: string, vmName: string): void;
  };
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
  const faults = new Faults((key) => harvesterVm?.enqueue(key));
  const ctx: StandInContext = {
    client: admin,
    logger,
    manager,
    behaviour,
    faults,
    kubevirt: options.virtHandlerClient !== undefined,
  };

  const own = options.ownHarvester === true;
  const harvesterVm = own ? undefined : harvesterVmController(ctx);
  const devices = pciDevicesStandIn(ctx);
  if (!own) {
    harvesterPvcController(ctx);
    vmiNetworkController(ctx);
    keyPairController(ctx);
  }
  if (own) backingImageStandIn(ctx);
  else imageController(ctx);
  longhornBinder(ctx);
  loadBalancerControllers(ctx);
  vmDhcpControllers(ctx);
  const webhook = !options.harvesterWebhook
    ? undefined
    : own
      ? longhornMutatingWebhook(ctx, options.harvesterWebhook)
      : pvcDeletionWebhook(ctx, options.harvesterWebhook);
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
    faults: {
      holdRemoval: (ns, vm) => faults.holdRemoval(ns, vm),
      releaseRemoval: (ns, vm) => faults.releaseRemoval(ns, vm),
      forgetVm: (ns, vm) => faults.forgetVm(ns, vm),
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
