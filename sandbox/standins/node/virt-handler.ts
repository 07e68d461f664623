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
import { nowIso, sameJson } from '../runtime.js';
import type { Condition, Pod, VirtualMachineInstance, VmiPhase, VmiStatus } from '../types.js';
import { domainInterfaces, domainVolumeStatuses, randomMac, withGuestAgentData } from './domain-status.js';
import { VMI_PODS } from './kubelet.js';
import {
  guestAddresses,
  networkDataOfSecret,
  networkDataSource,
  type GuestAddresses,
} from './guest-addresses.js';

/** The machine type libvirt resolves q35 to on Harvester's hosts (virt-handler records it). */
const MACHINE_TYPE = 'pc-q35-rhel9.6.0';

const isFinal = (vmi: VirtualMachineInstance): boolean =>
  vmi.status?.phase === 'Succeeded' || vmi.status?.phase === 'Failed';

function withPhase(status: VmiStatus, phase: VmiPhase): VmiStatus {
  if (status.phase === phase) return status;
  return {
    ...status,
    phase,
    phaseTransitionTimestamps: [
      ...(status.phaseTransitionTimestamps ?? []),
      { phase, phaseTransitionTimestamp: nowIso() },
    ],
  };
}

function upsertCondition(conditions: Condition[] | undefined, cond: Condition): Condition[] {
  const list = (conditions ?? []).filter((c) => c.type !== cond.type);
  const old = (conditions ?? []).find((c) => c.type === cond.type);
  return [...list, old && old.status === cond.status ? old : cond];
}

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
  /** When each VMI (by UID) entered the step it is in, as this process saw it. */
  const clocks = new Map<string, { step: string; since: number }>();
  const networks = sandboxNetworks(ctx);

  const remaining = (vmi: VirtualMachineInstance, step: string, delay: number): number => {
    const uid = vmi.metadata.uid ?? '';
    let clock = clocks.get(uid);
    if (clock?.step !== step) {
      clock = { step, since: Date.now() };
      clocks.set(uid, clock);
    }
    return Math.max(0, clock.since + delay - Date.now());
  };

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
    await writeStatus(vmi, (s, v) =>
      s.phase !== 'Scheduled'
        ? s
        : {
            ...withPhase(s, 'Running'),
            interfaces: domainInterfaces(v, () => randomMac()),
            volumeStatus: domainVolumeStatuses(v),
            machine: { type: MACHINE_TYPE },
            // No SELinux on the node: virt-controller needs this to render hot-plug attachment pods.
            selinuxContext: 'none',
            guestOSInfo: {},
          },
    );
    return undefined;
  }

  async function running(vmi: VirtualMachineInstance): Promise<ReconcileResult> {
    const agentWait = ctx.behaviour.noIp(keyOf(vmi))
      ? Infinity
      : remaining(vmi, 'Running', ctx.behaviour.delays.guestAgentMs);
    const needsAddresses = (vmi.status?.interfaces ?? []).some((i) => !i.ipAddress);
    const guest = agentWait === 0 && needsAddresses ? await guestOf(vmi) : [];
    await writeStatus(vmi, (s, v) => {
      const next: VmiStatus = { ...s, volumeStatus: domainVolumeStatuses(v) };
      if (agentWait === 0) {
        next.interfaces = withGuestAgentData(s.interfaces ?? [], guest);
        next.conditions = upsertCondition(s.conditions, {
          type: 'AgentConnected',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: nowIso(),
        });
        next.guestOSInfo = { id: 'ubuntu', name: 'Ubuntu', version: '24.04', kernelRelease: '6.8.0-generic' };
      }
      return next;
    });
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
    await writeStatus(vmi, (s) =>
      isFinal({ ...vmi, status: s })
        ? s
        : {
            ...withPhase(s, 'Succeeded'),
            conditions: (s.conditions ?? []).filter((c) => c.type !== 'AgentConnected'),
          },
    );
    return undefined;
  }

  async function reconcile(key: ObjectKey): Promise<ReconcileResult> {
    const vmi = vmis.get(key);
    if (!vmi || vmi.status?.nodeName !== SANDBOX_NODE || isFinal(vmi)) return;
    const phase = vmi.status.phase;
    const launcherGoing = pods.list(
      (p) =>
        p.metadata.labels?.[Labels.createdBy] === vmi.metadata.uid &&
        p.metadata.deletionTimestamp !== undefined,
    );
    if (vmi.metadata.deletionTimestamp || launcherGoing.length > 0)
      return phase === 'Scheduled' || phase === 'Running' ? shutdown(vmi) : undefined;
    if (phase === 'Scheduled') return start(vmi);
    if (phase === 'Running') return running(vmi);
    return undefined;
  }

  const controller = ctx.manager
    .controller('virt-handler', { reconcile })
    .watch(vmis, (e) => {
      if (e.type === 'DELETED') {
        clocks.delete(e.object.metadata.uid ?? '');
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
