// virt-handler's part for the VMIs virt-controller handed to the sandbox node (kubevirt v1.7.0
// pkg/virt-handler/vm.go), with configurable time for each step: a Scheduled VMI's domain starts
// (Running: domain interfaces, disk targets, the machine type); after a while its guest agent
// reports the interfaces' addresses; hot-plugged volumes whose attachment pod is ready are
// mounted and attached; a VMI being deleted, or whose launcher pod is being deleted (the pod's
// SIGTERM makes virt-launcher shut the guest down through ACPI), shuts its guest down and turns
// Succeeded, after which its launcher pod can end (the kubelet stand-in) and virt-controller
// removes its finalizers.
// Everything before Scheduled and after Succeeded is virt-controller's.
import type { Secret } from '../../../src/api/core.js';
import { keyOf, type ObjectKey } from '../../../src/api/object-key.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { isConflict, isNotFound } from '../../../src/kube/errors.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { ReconcileResult } from '../../../src/kube/work-queue.js';
import type { StandInContext } from '../context.js';
import { Labels, SANDBOX_NODE } from '../names.js';
import { sandboxNetworks } from '../network-servers.js';
import { sameJson } from '../runtime.js';
import type { Pod, VirtualMachineInstance, VmiStatus } from '../types.js';
import { domainVolumeStatuses, randomMac } from './domain-status.js';
import {
  runningStatus,
  shutdownStatus,
  startedStatus,
  StepClocks,
  vmiStep,
} from './virt-handler-decisions.js';
import { VMI_PODS } from './kubelet.js';
import {
  guestAddresses,
  networkDataOfSecret,
  networkDataSource,
  type GuestAddresses,
} from './guest-addresses.js';

/** A guest waiting for a DHCP lease (Harvester's IP pool binds its MAC soon) asks again this often. */
const LEASE_RETRY_MS = 500;

export interface VirtHandlerStandIn {
  controller: Controller;
  /** Makes every VMI look again (delays changed). */
  requeueAll(): void;
}

/**
 * @param handlerClient writes VMIs as virt-handler's service account (virt-api's webhooks tell
 *   KubeVirt's own components by that name); reads come from the manager's caches.
 */
export function virtHandler(ctx: StandInContext, handlerClient: KubeClient): VirtHandlerStandIn {
  const vmis = ctx.manager.cache<VirtualMachineInstance>({ type: Resources.virtualMachineInstance });
  const pods = ctx.manager.cache<Pod>(VMI_PODS);
  const clocks = new StepClocks();
  const networks = sandboxNetworks(ctx);
  const remaining = (vmi: VirtualMachineInstance, step: string, delay: number): number =>
    clocks.remaining(vmi.metadata.uid ?? '', step, delay);

  /**
   * virt-handler may update VMIs but not get them (its ClusterRole): it writes what its informer
   * holds, and a Conflict waits for the informer's newer copy, whose event brings the VMI back.
   */
  async function writeStatus(
    vmi: VirtualMachineInstance,
    change: (s: VmiStatus, v: VirtualMachineInstance) => VmiStatus,
  ): Promise<void> {
    const next = change({ ...structuredClone(vmi.status) }, vmi);
    if (sameJson(next, vmi.status ?? {})) return;
    try {
      await handlerClient.update(Resources.virtualMachineInstance, { ...vmi, status: next });
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }

  /** The cloud-init network data as the launcher hands it to the guest: inline, or from its Secret. */
  async function networkData(vmi: VirtualMachineInstance): Promise<string | undefined> {
    const source = networkDataSource(vmi);
    if (!source) return undefined;
    if ('inline' in source) return source.inline;
    const secret = await ctx.client.find<Secret>(Resources.secret, {
      namespace: vmi.metadata.namespace ?? '',
      name: source.secret,
    });
    return networkDataOfSecret(secret?.data);
  }

  /** The guest's addresses: its interfaces, its cloud-init network data, its networks' servers. */
  async function guestOf(vmi: VirtualMachineInstance): Promise<GuestAddresses[]> {
    const nics = (vmi.status?.interfaces ?? []).map((i) => ({ name: i.name ?? '', mac: i.mac ?? '' }));
    return guestAddresses(nics, await networkData(vmi), networks.serversOf(vmi));
  }

  async function start(vmi: VirtualMachineInstance): Promise<ReconcileResult> {
    const wait = remaining(vmi, 'Scheduled', ctx.behaviour.delays.scheduledMs);
    if (wait > 0) return { requeueAfterMs: wait };
    await writeStatus(vmi, (s, v) => startedStatus(s, v, () => randomMac()));
    return undefined;
  }

  async function running(vmi: VirtualMachineInstance): Promise<ReconcileResult> {
    const agentWait = ctx.behaviour.noIp(keyOf(vmi))
      ? Infinity
      : remaining(vmi, 'Running', ctx.behaviour.delays.guestAgentMs);
    const needsAddresses = (vmi.status?.interfaces ?? []).some((i) => !i.ipAddress);
    const guest = agentWait === 0 && needsAddresses ? await guestOf(vmi) : [];
    await writeStatus(vmi, (s, v) => runningStatus(s, v, agentWait === 0, guest));
    if (guest.some((g) => g.awaitingLease)) return { requeueAfterMs: LEASE_RETRY_MS };
    if (Number.isFinite(agentWait) && agentWait > 0) return { requeueAfterMs: agentWait };
    // A hot-plug mid-way (mounted, not yet attached) takes another pass, as virt-handler's refresh.
    const midway = domainVolumeStatuses(vmi).some((v) => v.phase === 'MountedToPod');
    return midway ? { requeueAfterMs: 200 } : undefined;
  }

  /** A deleted VMI: the guest is shut down gracefully, then the VMI is final. */
  async function shutdown(vmi: VirtualMachineInstance): Promise<ReconcileResult> {
    const wait = remaining(vmi, 'Deleting', ctx.behaviour.delays.shutdownMs);
    if (wait > 0) return { requeueAfterMs: wait };
    await writeStatus(vmi, (s) => shutdownStatus(s, vmi));
    return undefined;
  }

  async function reconcile(key: ObjectKey): Promise<ReconcileResult> {
    const vmi = vmis.get(key);
    if (!vmi || vmi.status?.nodeName !== SANDBOX_NODE) return;
    const launcherGoing = pods.list(
      (p) =>
        p.metadata.labels?.[Labels.createdBy] === vmi.metadata.uid &&
        p.metadata.deletionTimestamp !== undefined,
    );
    switch (vmiStep(vmi, launcherGoing.length > 0)) {
      case 'shutdown':
        return shutdown(vmi);
      case 'start':
        return start(vmi);
      case 'running':
        return running(vmi);
      case undefined:
        return undefined;
    }
  }

  const controller = ctx.manager
    .controller('virt-handler', { reconcile })
    .watch(vmis, (e) => {
      if (e.type === 'DELETED') {
        clocks.forget(e.object.metadata.uid ?? '');
        networks.forget(e.object.metadata.uid ?? '');
      }
      return keyOf(e.object);
    })
    .watch(pods, (e) => {
      const uid = e.object.metadata.labels?.[Labels.createdBy];
      const vmi = uid ? vmis.list((v) => v.metadata.uid === uid)[0] : undefined;
      return vmi ? keyOf(vmi) : undefined;
    });
  return {
    controller,
    requeueAll: () => {
      for (const vmi of vmis.list()) controller.enqueue(keyOf(vmi));
    },
  };
}
