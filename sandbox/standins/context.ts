// What the stand-in controllers share: the client they write with, the manager they declare
// their caches and controllers on, the behaviour knobs tests turn at runtime, and the injected faults.
import { formatKey, objectKey, type ObjectKey } from '../../src/api/object-key.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { Manager } from '../../src/kube/manager.js';
import type { Logger } from '../../src/log/logger.js';

export interface Delays {
  /** A bound pod's containers starting (the kubelet), before virt-controller can call its VMI Scheduled. */
  podStartMs: number;
  /** Scheduled -> Running (virt-handler starts the domain). */
  scheduledMs: number;
  /** Running -> the guest agent reports IP addresses. */
  guestAgentMs: number;
  /** A deleted VMI's guest shutdown, until the VMI finalizes. */
  shutdownMs: number;
}

export const DEFAULT_DELAYS: Delays = {
  podStartMs: 300,
  scheduledMs: 500,
  guestAgentMs: 1_000,
  shutdownMs: 500,
};

export interface VmRef {
  namespace: string;
  name: string;
}

export interface Behaviour {
  delays: Delays;
  noIp: (vm: VmRef) => boolean;
  /** Networks ("namespace/name") with no DHCP server and no router: only what cloud-init sets. */
  networksWithoutDhcp: readonly string[];
}

/** Faults decided out of band: nothing about them is ever written to an object. */
export class Faults {
  private readonly heldRemovals = new Set<string>();

  constructor(private readonly onRelease: (key: ObjectKey) => void) {}

  holdRemoval(namespace: string, vmName: string): void {
    this.heldRemovals.add(formatKey(objectKey(namespace, vmName)));
  }

  releaseRemoval(namespace: string, vmName: string): void {
    const key = objectKey(namespace, vmName);
    if (this.heldRemovals.delete(formatKey(key))) this.onRelease(key);
  }

  isRemovalHeld(key: ObjectKey): boolean {
    return this.heldRemovals.has(formatKey(key));
  }

  private readonly forgotten = new Set<string>();

  /** Harvester's VM controller ignores this VM from now on, as an older Harvester without it would. */
  forgetVm(namespace: string, vmName: string): void {
    this.forgotten.add(formatKey(objectKey(namespace, vmName)));
  }

  isForgotten(key: ObjectKey): boolean {
    return this.forgotten.has(formatKey(key));
  }
}

export interface StandInContext {
  client: KubeClient;
  logger: Logger;
  /** Every stand-in's caches and controllers, on one lifecycle. */
  manager: Manager;
  behaviour: Behaviour;
  faults: Faults;
  /** KubeVirt's own virt-api and virt-controller run (sandbox/kubevirt): the node stand-in plays its node. */
  kubevirt: boolean;
}
