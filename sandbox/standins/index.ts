// The controllers a real Harvester runs, played on top of a real kube-apiserver: Harvester's
// VM, PVC, VMI-network, KeyPair, image and load balancer controllers, the pcidevices and
// vm-dhcp-controller add-ons,
// KubeVirt's VM controller and VMI lifecycle (with virt-launcher pods and a kubelet stand-in
// for them), Longhorn's binding,
// and the CSI driver's calls. See docs/upstream/harvester-kubevirt.md for what each must do.
import { formatKey, keyOf } from '../../src/api/object-key.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Manager } from '../../src/kube/manager.js';
import { Resources } from '../../src/kube/resources.js';
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
import { vmDhcpControllers } from './harvester/vm-dhcp-controller.js';
import { sandboxKubelet } from './kubevirt/pods.js';
import { kubevirtVmController } from './kubevirt/vm-controller.js';
import { vmiLifecycle } from './kubevirt/vmi-lifecycle.js';
import { SharedInformers } from './runtime.js';
import { ensureDefaultStorageClass, longhornBinder } from './storage/longhorn.js';

export type { CreateVolumeRequest, CsiStandIn, HotplugRequest } from './csi/csi.js';
export type { Delays, VmRef } from './context.js';

export interface StandInOptions {
  delays?: Partial<Delays>;
  /** Per-VM behaviour decided out of band (never by a marker on the objects): no IP ever for some VMs. */
  noIp?: (vm: VmRef) => boolean;
  /** VLAN networks ("namespace/name") without DHCP: a guest there has only the address its network data gives. */
  networksWithoutDhcp?: readonly string[];
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
  const faults = new Faults((key) => harvesterVm.enqueue(key));
  const ctx: StandInContext = {
    client: admin,
    logger,
    manager,
    informers: new SharedInformers(manager),
    behaviour,
    faults,
  };

  const harvesterVm = harvesterVmController(ctx);
  const devices = pciDevicesStandIn(ctx, (key) => lifecycle.enqueue(formatKey(key)));
  ctx.placement = devices.placement;
  const lifecycle = vmiLifecycle(ctx);
  harvesterPvcController(ctx);
  vmiNetworkController(ctx);
  keyPairController(ctx);
  imageController(ctx);
  longhornBinder(ctx);
  kubevirtVmController(ctx);
  sandboxKubelet(ctx);
  loadBalancerControllers(ctx);
  vmDhcpControllers(ctx);

  await ensureDefaultStorageClass(admin);
  try {
    await manager.start();
  } catch (err) {
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
      for (const vmi of manager.cache({ type: Resources.virtualMachineInstance }).list())
        lifecycle.enqueue(formatKey(keyOf(vmi)));
    },
    faults: {
      holdRemoval: (ns, vm) => faults.holdRemoval(ns, vm),
      releaseRemoval: (ns, vm) => faults.releaseRemoval(ns, vm),
      forgetVm: (ns, vm) => faults.forgetVm(ns, vm),
    },
    csi: csiStandIn(admin),
    idle: () => manager.settled(QUIET_MS),
    async stop() {
      await manager.stop();
      logger.info('stand-in controllers stopped');
    },
  };
}
