// What the stand-in controllers share: the client they write with, the manager they declare
// their caches and controllers on, the behaviour knobs tests turn at runtime.
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

export interface StandInContext {
  client: KubeClient;
  logger: Logger;
  /** Every stand-in's caches and controllers, on one lifecycle. */
  manager: Manager;
  behaviour: Behaviour;
  /** KubeVirt's own virt-api and virt-controller run (sandbox/kubevirt): the node stand-in plays its node. */
  kubevirt: boolean;
}
