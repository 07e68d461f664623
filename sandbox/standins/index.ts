// The controllers a real Harvester runs, played on top of a real kube-apiserver: Harvester's
// VM, PVC, VMI-network, KeyPair, image and load balancer controllers, the pcidevices add-on,
// Longhorn's provisioning, the CSI driver's calls, and, beside KubeVirt's own virt-api and
// virt-controller (sandbox/kubevirt), what its node does: the kubelet and virt-handler
// (node/). See docs/upstream/harvester-kubevirt.md and docs/upstream/kubevirt.md.
import type { KubeClient } from '../../src/kube/client.js';
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
import { vmiNetworkController } from './harvester/vmi-network-controller.js';
import { kubelet } from './node/kubelet.js';
import { nodeController } from './node/node-controller.js';
import { virtHandler } from './node/virt-handler.js';
import { SharedInformers, sleep, type Reconciler } from './runtime.js';
import { ensureDefaultStorageClass, longhornBinder } from './storage/longhorn.js';

export type { CreateVolumeRequest, CsiStandIn, HotplugRequest } from './csi/csi.js';
export type { Delays, VmRef } from './context.js';

export interface StandInOptions {
  delays?: Partial<Delays>;
  /** Per-VM behaviour decided out of band (never by a marker on the objects): no IP ever for some VMs. */
  noIp?: (vm: VmRef) => boolean;
  /**
   * KubeVirt's virt-api and virt-controller run beside (sandbox/kubevirt): the node stand-in
   * plays the rest, writing VMIs with this client (virt-handler's service account). Without it
   * nothing runs VMs.
   */
  virtHandlerClient?: KubeClient;
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

export async function startStandIns(admin: KubeClient, options: StandInOptions = {}): Promise<StandIns> {
  const logger = options.logger ?? silentLogger;
  const informers = new SharedInformers(admin, logger);
  const behaviour: Behaviour = {
    delays: { ...DEFAULT_DELAYS, ...options.delays },
    noIp: options.noIp ?? (() => false),
  };
  const reconcilers: Reconciler[] = [];
  const faults = new Faults((key) => harvesterVm.enqueue(key));
  const kubevirt = options.virtHandlerClient !== undefined;
  const ctx: StandInContext = { client: admin, logger, informers, behaviour, faults, kubevirt };

  const harvesterVm = harvesterVmController(ctx);
  const devices = pciDevicesStandIn(ctx);
  const handler = options.virtHandlerClient ? virtHandler(ctx, options.virtHandlerClient) : undefined;
  reconcilers.push(
    ...devices.reconcilers,
    harvesterVm,
    harvesterPvcController(ctx),
    vmiNetworkController(ctx),
    keyPairController(ctx),
    imageController(ctx),
    ...longhornBinder(ctx),
    ...loadBalancerControllers(ctx),
    ...(handler ? [nodeController(ctx, devices.offer), kubelet(ctx), handler.reconciler] : []),
  );

  await ensureDefaultStorageClass(admin);
  try {
    await informers.start();
  } catch (err) {
    await informers.stop();
    await Promise.all(reconcilers.map((r) => r.queue.stop()));
    throw err;
  }
  logger.info('stand-in controllers started', { controllers: reconcilers.map((r) => r.name) });

  return {
    configure(change) {
      if (change.delays) behaviour.delays = { ...behaviour.delays, ...change.delays };
      if (change.noIp) behaviour.noIp = change.noIp;
      // VMIs sleeping out the old delays look again with the new ones.
      handler?.requeueAll();
    },
    faults: {
      holdRemoval: (ns, vm) => faults.holdRemoval(ns, vm),
      releaseRemoval: (ns, vm) => faults.releaseRemoval(ns, vm),
      forgetVm: (ns, vm) => faults.forgetVm(ns, vm),
    },
    csi: csiStandIn(admin),
    async idle() {
      // Work begets work through watch events, which take a moment to arrive.
      for (;;) {
        const before = reconcilers.reduce((n, r) => n + r.processed, 0);
        await Promise.all(reconcilers.map((r) => r.queue.idle()));
        await sleep(150);
        const after = reconcilers.reduce((n, r) => n + r.processed, 0);
        if (after === before && reconcilers.every((r) => r.queue.length === 0)) return;
      }
    },
    async stop() {
      await informers.stop();
      await Promise.all(reconcilers.map((r) => r.queue.stop()));
      logger.info('stand-in controllers stopped');
    },
  };
}
