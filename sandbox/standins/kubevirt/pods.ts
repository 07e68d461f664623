// The pods behind VMIs: a virt-launcher pod per VMI and a hot-plug attachment pod per
// hot-plugged volume, made as virt-controller makes them (owner references, labels,
// volumes), so the real garbage collector and pvc-protection controller see what they
// would see on Harvester. No kubelet runs here, so a small stand-in plays its part for
// these pods only: it reports a bound pod Running and Ready, and finishes the deletion
// of a pod marked for deletion (a real kubelet confirms it with a zero grace period).
import type { KubeClient } from '../../../src/kube/client.js';
import type { NewObject } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Annotations, ExtraResources, LAUNCHER_IMAGE, Labels, SANDBOX_NODE } from '../names.js';
import { Reconciler, nowIso } from '../runtime.js';
import type { Pod, VirtualMachineInstance } from '../types.js';
import { forceDelete, refOf, updateWithRetry } from '../writes.js';
import { claimNameOf, isHotplugVolume } from './vmi-template.js';

export const LAUNCHER = 'virt-launcher';
export const HOTPLUG = 'hotplug-disk';
export const POD_SELECTOR = `${Labels.kubevirtApp} in (${LAUNCHER},${HOTPLUG})`;

/**
 * One unit of a host device's resource per entry, in limits and requests
 * (virt-controller's WithHostDevicesDevicePlugins, services/renderresources.go).
 */
function deviceResources(vmi: VirtualMachineInstance): Record<string, string> {
  const counts = new Map<string, number>();
  const hostDevices =
    (vmi.spec.domain.devices?.hostDevices as Array<{ deviceName?: string }> | undefined) ?? [];
  for (const d of hostDevices)
    if (d.deviceName) counts.set(d.deviceName, (counts.get(d.deviceName) ?? 0) + 1);
  return Object.fromEntries([...counts].map(([r, n]) => [r, String(n)]));
}

export function launcherPodFor(vmi: VirtualMachineInstance): NewObject<Pod> {
  const name = vmi.metadata.name;
  const devices = deviceResources(vmi);
  const compute = {
    name: 'compute',
    image: LAUNCHER_IMAGE,
    ...(Object.keys(devices).length > 0 ? { resources: { limits: devices, requests: devices } } : {}),
  };
  const volumes = (vmi.spec.volumes ?? [])
    .filter((v) => !isHotplugVolume(v) && claimNameOf(v) !== undefined)
    .map((v) => ({ name: v.name, persistentVolumeClaim: { claimName: claimNameOf(v) ?? '' } }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `virt-launcher-${name}-`,
      namespace: vmi.metadata.namespace ?? '',
      labels: {
        ...withoutNodeLabel(vmi.metadata.labels),
        [Labels.kubevirtApp]: LAUNCHER,
        [Labels.createdBy]: vmi.metadata.uid ?? '',
        [Labels.vmName]: name,
      },
      annotations: { [Annotations.launcherDomain]: name, [Annotations.defaultContainer]: 'compute' },
      ownerReferences: [
        {
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachineInstance',
          name,
          uid: vmi.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      containers: [compute],
      volumes,
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      hostname: name,
    },
  };
}

export function attachmentPodFor(launcher: Pod, volumeName: string, claimName: string): NewObject<Pod> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: 'hp-volume-',
      namespace: launcher.metadata.namespace ?? '',
      labels: { [Labels.kubevirtApp]: HOTPLUG },
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          name: launcher.metadata.name,
          uid: launcher.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      nodeName: launcher.spec.nodeName ?? SANDBOX_NODE,
      containers: [{ name: 'hotplug-disk', image: LAUNCHER_IMAGE }],
      volumes: [{ name: volumeName, persistentVolumeClaim: { claimName } }],
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
    },
  };
}

function withoutNodeLabel(labels: Record<string, string> | undefined): Record<string, string> {
  const { [Labels.nodeName]: _node, ...rest } = labels ?? {};
  return rest;
}

/** What kube-scheduler does once the pod fits: a Binding to the node. */
export async function bindToNode(client: KubeClient, pod: Pod): Promise<void> {
  const ns = encodeURIComponent(pod.metadata.namespace ?? '');
  const name = pod.metadata.name;
  await client.call<unknown>({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/pods/${encodeURIComponent(name)}/binding`,
    body: {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name },
      target: { apiVersion: 'v1', kind: 'Node', name: SANDBOX_NODE },
    },
    operation: `bind pod ${pod.metadata.namespace ?? ''}/${name}`,
  });
}

export function isPodReady(pod: Pod | undefined): boolean {
  return pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

function runningStatus(pod: Pod): Pod['status'] {
  const now = nowIso();
  const cond = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: now });
  return {
    ...pod.status,
    phase: 'Running',
    conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(
      cond,
    ),
    hostIP: '127.0.0.1',
    startTime: now,
    containerStatuses: pod.spec.containers.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: '',
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: now } },
    })),
  };
}

/** The kubelet's part for VMI pods on the sandbox node. */
export function sandboxKubelet(ctx: StandInContext): Reconciler {
  const pods = ctx.informers.get<Pod>(ExtraResources.pod, POD_SELECTOR);
  return new Reconciler(
    'kubelet',
    async (key) => {
      const pod = pods.get(key);
      if (!pod?.spec.nodeName) return;
      if (pod.metadata.deletionTimestamp) {
        await forceDelete(ctx.client, ExtraResources.pod, refOf(pod));
        return;
      }
      if (pod.status?.phase === 'Running') return;
      await updateWithRetry(
        ctx.client,
        ExtraResources.pod,
        pod,
        refOf(pod),
        (p) =>
          p.status?.phase === 'Running' || p.metadata.deletionTimestamp
            ? undefined
            : { ...p, status: runningStatus(p) },
        'status',
      );
    },
    ctx.logger.child({ controller: 'kubelet' }),
  ).watch(pods);
}
