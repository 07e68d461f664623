// The kubelet's part on the sandbox node, for the pods kube-scheduler binds to it (virt-launcher
// and hot-plug attachment pods: nothing else schedules here): a bound pod's containers start
// and are ready (Running, Ready, the pod's addresses); a pod marked for deletion ends once its
// containers have stopped, and the kubelet confirms the deletion (grace period 0). A launcher's
// compute container stops when its guest has shut down (virt-handler made the VMI final, or the
// VMI is gone); other containers stop at once.
import { keyOf, type ObjectKey } from '../../../src/api/object-key.js';
import type { CacheSpec, Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { ReconcileResult } from '../../../src/kube/work-queue.js';
import type { StandInContext } from '../context.js';
import { ExtraResources, Labels, SANDBOX_NODE } from '../names.js';
import { nowIso } from '../runtime.js';
import type { Pod, VirtualMachineInstance } from '../types.js';
import { forceDelete, updateWithRetry } from '../writes.js';

export const LAUNCHER = 'virt-launcher';
export const HOTPLUG = 'hotplug-disk';
/** The pods virt-controller makes for VMIs (its `kubevirt.io` label): the only ones on this node. */
export const VMI_PODS: CacheSpec = {
  type: ExtraResources.pod,
  labelSelector: `${Labels.kubevirtApp} in (${LAUNCHER},${HOTPLUG})`,
};

interface Container {
  name: string;
  image: string;
  restartPolicy?: string;
}

/** Running and Ready, every container (and sidecar init container) started. */
export function runningStatus(pod: Pod, podIp: string, now: string): Pod['status'] {
  const cond = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: now });
  const started = (c: Container) => ({
    name: c.name,
    image: c.image,
    imageID: '',
    ready: true,
    started: true,
    restartCount: 0,
    state: { running: { startedAt: now } },
  });
  const initContainers = (pod.spec.initContainers as Container[] | undefined) ?? [];
  // Readiness gates (virt-controller's kubevirt.io/virtual-machine-unpaused) stay as their owner set them.
  const gates = (pod.status?.conditions ?? []).filter((c) => c.type.includes('/'));
  return {
    ...pod.status,
    phase: 'Running',
    conditions: [
      ...['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(cond),
      ...gates,
    ],
    hostIP: '127.0.0.1',
    hostIPs: [{ ip: '127.0.0.1' }],
    podIP: podIp,
    podIPs: [{ ip: podIp }],
    startTime: now,
    containerStatuses: pod.spec.containers.map(started),
    ...(initContainers.length > 0
      ? { initContainerStatuses: initContainers.filter((c) => c.restartPolicy === 'Always').map(started) }
      : {}),
  };
}

/** Pod addresses from the cluster's pod network (RKE2's default 10.52.0.0/16 on Harvester). */
class PodNetwork {
  private next = 10;

  allocate(): string {
    const n = this.next++;
    return `10.52.${Math.floor(n / 250) % 256}.${(n % 250) + 2}`;
  }
}

export function kubelet(ctx: StandInContext): Controller {
  const { client } = ctx;
  const pods = ctx.manager.cache<Pod>(VMI_PODS);
  const vmis = ctx.manager.cache<VirtualMachineInstance>({ type: Resources.virtualMachineInstance });
  const network = new PodNetwork();
  /** When each pod (by UID) was first seen bound, as this process saw it. */
  const boundAt = new Map<string, number>();

  /** Whether the pod's containers have all stopped by now. */
  const stopped = (pod: Pod): boolean => {
    if (pod.metadata.labels?.[Labels.kubevirtApp] !== LAUNCHER) return true;
    const uid = pod.metadata.labels[Labels.createdBy];
    const vmi = vmis.list((v) => v.metadata.uid === uid)[0];
    return !vmi || vmi.status?.phase === 'Succeeded' || vmi.status?.phase === 'Failed';
  };

  async function reconcile(key: ObjectKey): Promise<ReconcileResult> {
    const pod = pods.get(key);
    if (pod?.spec.nodeName !== SANDBOX_NODE) return;
    if (pod.metadata.deletionTimestamp) {
      if (stopped(pod)) await forceDelete(client, ExtraResources.pod, key);
      return;
    }
    if (pod.status?.phase === 'Running') return;
    const uid = pod.metadata.uid ?? '';
    const since = boundAt.get(uid) ?? Date.now();
    boundAt.set(uid, since);
    const wait = since + ctx.behaviour.delays.podStartMs - Date.now();
    if (wait > 0) return { requeueAfterMs: wait };
    const ip = network.allocate();
    await updateWithRetry(
      client,
      ExtraResources.pod,
      pod,
      key,
      (p) =>
        p.status?.phase === 'Running' || p.metadata.deletionTimestamp
          ? undefined
          : { ...p, status: runningStatus(p, ip, nowIso()) },
      'status',
    );
  }

  return (
    ctx.manager
      .controller('kubelet', { reconcile })
      .watch(pods, (e) => {
        if (e.type === 'DELETED') boundAt.delete(e.object.metadata.uid ?? '');
        return keyOf(e.object);
      })
      // A launcher waiting to end looks again when its VMI turns final or goes.
      .watch(vmis, (e) =>
        pods
          .list(
            (p) =>
              p.metadata.deletionTimestamp !== undefined &&
              p.metadata.labels?.[Labels.createdBy] === e.object.metadata.uid,
          )
          .map(keyOf),
      )
  );
}
