// A VMI's life as virt-controller's VMI controller and virt-handler drive it (v1.7.0),
// with configurable time in each phase: Pending (launcher pod created; waits for missing
// PVCs) -> Scheduling -> Scheduled (pod bound once its PVCs are Bound, kubelet reports it
// Ready) -> Running (domain interfaces, disk targets) -> addresses from the guest agent.
// Hot-plugged volumes get an attachment pod and their volumeStatus phases. A deleted VMI
// shuts down, turns final, its pods go, and virt-controller's finalizer is removed.
import { Resources, type KubeObject, type NewObject } from '../../../src/kube/resources.js';
import type { ReconcileResult } from '../../../src/kube/work-queue.js';
import type { StandInContext } from '../context.js';
import { ExtraResources, Finalizers, LAUNCHER_IMAGE, Labels } from '../names.js';
import { Reconciler, keyOf, nowIso, sameJson } from '../runtime.js';
import type {
  PersistentVolumeClaim,
  Pod,
  VirtualMachine,
  VirtualMachineInstance,
  VmiPhase,
  VmiStatus,
} from '../types.js';
import { patchFinalizers, refOf, updateWithRetry, withoutFinalizer } from '../writes.js';
import { findCondition, removeCondition, upsertCondition } from './conditions.js';
import {
  HOTPLUG,
  LAUNCHER,
  POD_SELECTOR,
  attachmentPodFor,
  bindToNode,
  isPodReady,
  launcherPodFor,
} from './pods.js';
import { sandboxNetworks } from '../network-servers.js';
import { guestAddresses, type GuestAddresses } from './guest-network.js';
import { isFinal } from './vm-status.js';
import { claimNameOf, isHotplugVolume } from './vmi-template.js';
import { domainInterfaces, volumeStatuses, withGuestAgentData, withPhase } from './vmi-status.js';

export function vmiLifecycle(ctx: StandInContext): Reconciler {
  const { client } = ctx;
  const vmis = ctx.informers.get<VirtualMachineInstance>(Resources.virtualMachineInstance);
  const pods = ctx.informers.get<Pod>(ExtraResources.pod, POD_SELECTOR);
  const pvcs = ctx.informers.get<PersistentVolumeClaim>(Resources.pvc);
  const vms = ctx.informers.get<VirtualMachine>(Resources.virtualMachine);
  /** When each VMI (by UID) entered the phase it is in, as this process saw it. */
  const clocks = new Map<string, { phase: string; since: number }>();
  const networks = sandboxNetworks(ctx);
  /** Pods created but not yet in the cache: never create them twice (virt-controller's expectations). */
  const created = new Map<string, number>();

  async function createOnce(id: string, pod: NewObject<Pod>): Promise<Pod | undefined> {
    const at = created.get(id);
    if (at !== undefined && Date.now() - at < EXPECTATION_TTL_MS) return undefined;
    const made = await client.create<Pod>(ExtraResources.pod, pod);
    created.set(id, Date.now());
    return made;
  }

  /** ms still to wait in `phase` before `delay` has passed; starts the clock on first sight. */
  const remaining = (vmi: VirtualMachineInstance, phase: string, delay: number): number => {
    const uid = vmi.metadata.uid ?? '';
    let clock = clocks.get(uid);
    if (clock?.phase !== phase) {
      clock = { phase, since: Date.now() };
      clocks.set(uid, clock);
    }
    return Math.max(0, clock.since + delay - Date.now());
  };

  const launcherOf = (vmi: VirtualMachineInstance): Pod | undefined =>
    pods.list(
      (p) =>
        p.metadata.namespace === vmi.metadata.namespace &&
        p.metadata.labels?.[Labels.kubevirtApp] === LAUNCHER &&
        p.metadata.labels[Labels.createdBy] === vmi.metadata.uid,
    )[0];

  const attachPodsOf = (launcher: Pod | undefined): Pod[] =>
    launcher
      ? pods.list(
          (p) =>
            p.metadata.labels?.[Labels.kubevirtApp] === HOTPLUG &&
            (p.metadata.ownerReferences ?? []).some((o) => o.uid === launcher.metadata.uid),
        )
      : [];

  const pvcOf = (vmi: VirtualMachineInstance, claim: string): PersistentVolumeClaim | undefined =>
    pvcs.get(keyOf(vmi.metadata.namespace, claim));

  /** Claims the launcher pod needs (hot-plugged ones come later, through attachment pods). */
  const bootClaims = (vmi: VirtualMachineInstance): string[] =>
    (vmi.spec.volumes ?? []).filter((v) => !isHotplugVolume(v)).flatMap((v) => claimNameOf(v) ?? []);

  const writeStatus = (
    vmi: VirtualMachineInstance,
    change: (s: VmiStatus, v: VirtualMachineInstance) => VmiStatus,
  ) =>
    updateWithRetry(client, Resources.virtualMachineInstance, vmi, refOf(vmi), (v) => {
      const next = change({ ...v.status }, v);
      if (sameJson(next, v.status ?? {})) return undefined;
      return { ...v, status: next };
    });

  const moveTo = (
    vmi: VirtualMachineInstance,
    phase: VmiPhase,
    extra: (s: VmiStatus, v: VirtualMachineInstance) => VmiStatus = (s) => s,
  ) => writeStatus(vmi, (s, v) => (s.phase === vmi.status?.phase ? extra(withPhase(s, phase), v) : s));

  const notReady = (reason: string, message: string) => ({
    type: 'Ready',
    status: 'False',
    reason,
    message,
    lastProbeTime: nowIso(),
    lastTransitionTime: nowIso(),
  });

  async function pending(vmi: VirtualMachineInstance, launcher: Pod | undefined): Promise<ReconcileResult> {
    const missing = bootClaims(vmi).find((c) => !pvcOf(vmi, c));
    if (missing !== undefined) {
      const message = `PVC ${vmi.metadata.namespace ?? ''}/${missing} does not exist, waiting for it to appear`;
      await writeStatus(vmi, (s) => ({
        ...withPhase(s, 'Pending'),
        conditions: upsertCondition(s.conditions, {
          type: 'Synchronized',
          status: 'False',
          reason: 'FailedPvcNotFound',
          message,
          lastProbeTime: null,
          lastTransitionTime: nowIso(),
        }),
      }));
      return; // a PVC event brings us back
    }
    const pod = launcher ?? (await createOnce(`${vmi.metadata.uid ?? ''}/launcher`, launcherPodFor(vmi)));
    if (!pod) return; // created earlier; its event brings us back
    if ((vmi.status?.phase ?? '') === '' || findCondition(vmi.status?.conditions, 'Synchronized')) {
      await writeStatus(vmi, (s) => ({
        ...withPhase(s, 'Pending'),
        activePods: { [pod.metadata.uid ?? '']: '' },
        conditions: upsertCondition(
          removeCondition(s.conditions, 'Synchronized'),
          notReady('PodNotExists', 'virt-launcher pod has not yet been scheduled'),
        ),
      }));
      return;
    }
    const wait = remaining(vmi, 'Pending', ctx.behaviour.delays.pendingMs);
    if (wait > 0) return { requeueAfterMs: wait };
    await moveTo(vmi, 'Scheduling');
  }

  /** kube-scheduler's verdict on the pod, which virt-controller copies onto the VMI (watch/vmi/lifecycle.go). */
  async function unschedulable(vmi: VirtualMachineInstance, launcher: Pod, message: string): Promise<void> {
    const condition = {
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message,
      lastProbeTime: null,
      lastTransitionTime: nowIso(),
    };
    await updateWithRetry(
      client,
      ExtraResources.pod,
      launcher,
      refOf(launcher),
      (p) =>
        findCondition(p.status?.conditions, 'PodScheduled')?.message === message
          ? undefined
          : { ...p, status: { ...p.status, conditions: upsertCondition(p.status?.conditions, condition) } },
      'status',
    );
    await writeStatus(vmi, (s) => ({ ...s, conditions: upsertCondition(s.conditions, condition) }));
  }

  async function scheduling(
    vmi: VirtualMachineInstance,
    launcher: Pod | undefined,
  ): Promise<ReconcileResult> {
    if (!launcher) return void (await moveTo(vmi, 'Failed'));
    if (!launcher.spec.nodeName) {
      const unbound = bootClaims(vmi).some((c) => pvcOf(vmi, c)?.status?.phase !== 'Bound');
      if (unbound) return; // the scheduler waits for immediate-binding claims; a PVC event retries
      const wait = remaining(vmi, 'Scheduling', ctx.behaviour.delays.schedulingMs);
      if (wait > 0) return { requeueAfterMs: wait };
      const unfit = ctx.placement?.unschedulable(launcher);
      if (unfit) return void (await unschedulable(vmi, launcher, unfit)); // the devices on offer changing brings us back
      await bindToNode(client, launcher);
      return;
    }
    if (!isPodReady(launcher)) return; // the kubelet stand-in reports it; its event brings us back
    const node = launcher.spec.nodeName;
    await moveTo(vmi, 'Scheduled', (s, v) => ({
      ...s,
      nodeName: node,
      activePods: { [launcher.metadata.uid ?? '']: node },
      qosClass: launcher.status?.qosClass ?? 'BestEffort',
      conditions: upsertCondition(
        removeCondition(s.conditions, 'PodScheduled'),
        notReady('GuestNotRunning', 'Guest VM is not reported as running'),
      ),
      volumeStatus: volumeStatuses(v, world(v, launcher, false)),
    }));
    await updateWithRetry(client, Resources.virtualMachineInstance, undefined, refOf(vmi), (v) =>
      v.metadata.labels?.[Labels.nodeName] === node
        ? undefined
        : { ...v, metadata: { ...v.metadata, labels: { ...v.metadata.labels, [Labels.nodeName]: node } } },
    );
  }

  async function scheduled(vmi: VirtualMachineInstance, launcher: Pod | undefined): Promise<ReconcileResult> {
    if (!launcher || launcher.metadata.deletionTimestamp) return void (await moveTo(vmi, 'Failed'));
    const wait = remaining(vmi, 'Scheduled', ctx.behaviour.delays.scheduledMs);
    if (wait > 0) return { requeueAfterMs: wait };
    const podReady = launcher.status?.conditions?.find((c) => c.type === 'Ready');
    await moveTo(vmi, 'Running', (s, v) => ({
      ...s,
      conditions: upsertCondition(s.conditions, {
        type: 'Ready',
        status: 'True',
        lastProbeTime: null,
        lastTransitionTime: podReady?.lastTransitionTime ?? nowIso(),
      }),
      interfaces: domainInterfaces(v, () => randomMac()),
      volumeStatus: volumeStatuses(v, world(v, launcher, true)),
      launcherContainerImageVersion: LAUNCHER_IMAGE,
      guestOSInfo: {},
    }));
  }

  async function running(vmi: VirtualMachineInstance, launcher: Pod | undefined): Promise<ReconcileResult> {
    if (!launcher || launcher.metadata.deletionTimestamp) return void (await moveTo(vmi, 'Failed'));
    await syncAttachmentPods(vmi, launcher);
    const owner = { namespace: vmi.metadata.namespace ?? '', name: vmi.metadata.name };
    const agentWait = ctx.behaviour.noIp(owner)
      ? Infinity
      : remaining(vmi, 'Running', ctx.behaviour.delays.guestAgentMs);
    const guest = agentWait === 0 && needsAddresses(vmi) ? await guestOf(vmi) : [];
    await writeStatus(vmi, (s, v) => {
      const next = { ...s, volumeStatus: volumeStatuses(v, world(v, launcher, true)) };
      if (agentWait === 0) {
        next.interfaces = withGuestAgentData(s.interfaces ?? [], guest);
        next.conditions = upsertCondition(s.conditions, {
          type: 'AgentConnected',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: nowIso(),
        });
      }
      return next;
    });
    // A guest waiting for a DHCP lease (Harvester's IP pool binds its MAC soon) asks again.
    if (guest.some((g) => g.awaitingLease)) return { requeueAfterMs: LEASE_RETRY_MS };
    return Number.isFinite(agentWait) && agentWait > 0 ? { requeueAfterMs: agentWait } : undefined;
  }

  const needsAddresses = (vmi: VirtualMachineInstance): boolean =>
    (vmi.status?.interfaces ?? []).some((i) => !i.ipAddress);

  /** The guest's addresses: its interfaces, its cloud-init network data, its networks' servers. */
  async function guestOf(vmi: VirtualMachineInstance): Promise<GuestAddresses[]> {
    const nics = (vmi.status?.interfaces ?? []).map((i) => ({ name: i.name ?? '', mac: i.mac ?? '' }));
    return guestAddresses(nics, await networkDataOf(vmi), networks.serversOf(vmi));
  }

  /** The NoCloud network data as the launcher hands it to the guest: inline, base64, or from its Secret. */
  async function networkDataOf(vmi: VirtualMachineInstance): Promise<string | undefined> {
    const source = (vmi.spec.volumes ?? []).find((v) => v['cloudInitNoCloud'])?.['cloudInitNoCloud'] as
      | { networkData?: string; networkDataBase64?: string; networkDataSecretRef?: { name?: string } }
      | undefined;
    if (!source) return undefined;
    if (source.networkData) return source.networkData;
    if (source.networkDataBase64) return Buffer.from(source.networkDataBase64, 'base64').toString('utf8');
    const name = source.networkDataSecretRef?.name;
    if (!name) return undefined;
    const secret = await client.find<KubeObject & { data?: Record<string, string> }>(Resources.secret, {
      namespace: vmi.metadata.namespace ?? '',
      name,
    });
    const encoded = secret?.data?.['networkdata'];
    return encoded ? Buffer.from(encoded, 'base64').toString('utf8') : undefined;
  }

  /** One attachment pod per hot-plugged volume of the spec; pods of unplugged volumes go. */
  async function syncAttachmentPods(vmi: VirtualMachineInstance, launcher: Pod): Promise<void> {
    const attached = attachPodsOf(launcher);
    const wanted = (vmi.spec.volumes ?? []).filter(isHotplugVolume);
    for (const volume of wanted) {
      const claim = claimNameOf(volume) ?? '';
      if (pvcOf(vmi, claim)?.status?.phase !== 'Bound') continue;
      if (!attached.some((p) => podServes(p, volume.name))) {
        await createOnce(
          `${launcher.metadata.uid ?? ''}/${volume.name}`,
          attachmentPodFor(launcher, volume.name, claim),
        );
      }
    }
    for (const pod of attached) {
      const stillWanted = wanted.some((v) => podServes(pod, v.name));
      if (!stillWanted && !pod.metadata.deletionTimestamp)
        await client.delete(ExtraResources.pod, refOf(pod));
    }
  }

  const world = (vmi: VirtualMachineInstance, launcher: Pod, domainRunning: boolean) => {
    const attached = attachPodsOf(launcher);
    return {
      pvc: (claim: string) => pvcOf(vmi, claim),
      attachPod: (volume: string) => attached.find((p) => podServes(p, volume)),
      domainRunning,
    };
  };

  async function shutdown(vmi: VirtualMachineInstance, launcher: Pod | undefined): Promise<ReconcileResult> {
    if (!isFinal(vmi)) {
      const wait = remaining(vmi, 'Deleting', ctx.behaviour.delays.shutdownMs);
      if (wait > 0) return { requeueAfterMs: wait };
      const wasUp = vmi.status?.phase === 'Running' || vmi.status?.phase === 'Scheduled';
      await moveTo(vmi, wasUp ? 'Succeeded' : 'Failed', (s) => ({
        ...s,
        conditions: upsertCondition(
          s.conditions,
          notReady('PodTerminating', 'virt-launcher pod is terminating'),
        ),
      }));
      return;
    }
    const remainingPods = [...attachPodsOf(launcher), ...(launcher ? [launcher] : [])];
    for (const pod of remainingPods)
      if (!pod.metadata.deletionTimestamp) await client.delete(ExtraResources.pod, refOf(pod));
    if (remainingPods.length > 0) return; // pod deletions bring us back
    const hasOwnerVm = vms.get(keyOf(vmi.metadata.namespace, vmi.metadata.name)) !== undefined;
    await patchFinalizers(client, Resources.virtualMachineInstance, vmi, (list) =>
      withoutFinalizer(Finalizers.kubevirtVmiForegroundDelete)(
        hasOwnerVm ? list : withoutFinalizer(Finalizers.kubevirtVmController)(list),
      ),
    );
  }

  const reconciler = new Reconciler(
    'kubevirt-vmi',
    async (key) => {
      const vmi = vmis.get(key);
      if (!vmi) return;
      const launcher = launcherOf(vmi);
      if (vmi.metadata.deletionTimestamp || isFinal(vmi)) return shutdown(vmi, launcher);
      switch (vmi.status?.phase ?? '') {
        case '':
        case 'Pending':
          return pending(vmi, launcher);
        case 'Scheduling':
          return scheduling(vmi, launcher);
        case 'Scheduled':
          return scheduled(vmi, launcher);
        case 'Running':
          return running(vmi, launcher);
        case 'Succeeded':
        case 'Failed':
        case 'Unknown':
        case 'WaitingForSync':
          return undefined;
      }
    },
    ctx.logger.child({ controller: 'kubevirt-vmi' }),
  );
  /** A pod in the cache settles its creation expectation. */
  function forgetCreation(pod: Pod): void {
    const labels = pod.metadata.labels ?? {};
    if (labels[Labels.kubevirtApp] === LAUNCHER) created.delete(`${labels[Labels.createdBy] ?? ''}/launcher`);
    const owner = pod.metadata.ownerReferences?.find((o) => o.kind === 'Pod');
    for (const v of pod.spec.volumes ?? []) if (owner) created.delete(`${owner.uid}/${v.name}`);
  }

  reconciler.watch(vmis, (e) => {
    if (e.type === 'DELETED') {
      clocks.delete(e.object.metadata.uid ?? '');
      networks.forget(e.object.metadata.uid ?? '');
    }
    return keyOf(e.object.metadata.namespace, e.object.metadata.name);
  });
  reconciler.watch(pods, (e) => {
    forgetCreation(e.object);
    return vmiKeyOfPod(e.object, (name) => pods.get(keyOf(e.object.metadata.namespace, name)));
  });
  reconciler.watch(pvcs, (e) =>
    vmis
      .list(
        (v) =>
          v.metadata.namespace === e.object.metadata.namespace &&
          (v.spec.volumes ?? []).some((vol) => claimNameOf(vol) === e.object.metadata.name),
      )
      .map((v) => keyOf(v.metadata.namespace, v.metadata.name)),
  );
  return reconciler;
}

const EXPECTATION_TTL_MS = 30_000;
const LEASE_RETRY_MS = 500;

const podServes = (pod: Pod, volumeName: string): boolean =>
  (pod.spec.volumes ?? []).some((v) => v.name === volumeName);

function vmiKeyOfPod(pod: Pod, podByName: (name: string) => Pod | undefined): string | undefined {
  const ns = pod.metadata.namespace;
  if (pod.metadata.labels?.[Labels.kubevirtApp] === LAUNCHER)
    return keyOf(ns, pod.metadata.labels[Labels.vmName]);
  const owner = pod.metadata.ownerReferences?.find((o) => o.kind === 'Pod');
  const launcher = owner ? podByName(owner.name) : undefined;
  return launcher ? keyOf(ns, launcher.metadata.labels?.[Labels.vmName]) : undefined;
}

/** A locally administered MAC in QEMU's range, as libvirt picks one. */
function randomMac(): string {
  const bytes = [0x52, 0x54, 0x00, ...Array.from({ length: 3 }, () => Math.floor(Math.random() * 256))];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}
