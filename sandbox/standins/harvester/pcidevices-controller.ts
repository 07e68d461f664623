// Harvester's pcidevices-controller add-on (harvester/pcidevices v1.8.0), as far as the
// driver can see it (docs/upstream/harvester-host-devices.md):
// - the PCIDeviceClaim controller: a claim owned by its PCIDevice binds the device to
//   vfio-pci (PCIDevice status.kernelDriverInUse), hands it to the device plugin and sets
//   status.passthroughEnabled; its removal gives the device back to its original driver;
// - the USBDeviceClaim controller: USBDevice status.enabled, the claim's nodeName/pciAddress;
// - the device plugins and the kubelet's device manager: a node offers a resource for each
//   enabled device, a launcher pod is scheduled only where its device resources are free,
//   and is allocated specific devices (`placement`, used by the VMI lifecycle);
// - vGPUs only as a fixed offer of the sandbox node (SANDBOX_VGPUS);
// - the VM controller: `harvesterhci.io/deviceAllocationDetails` on the VM of a Running VMI,
//   the PCI devices its pod was given.
import { keyOf, objectKey, type ObjectKey } from '../../../src/api/object-key.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { ExtraResources, Labels, SANDBOX_NODE } from '../names.js';

import type { Pod, VirtualMachine, VirtualMachineInstance } from '../types.js';
import { mergePatchWithRetry, refOf } from '../writes.js';
import { POD_SELECTOR, LAUNCHER } from '../kubevirt/pods.js';
import { SANDBOX_VGPUS } from './device-discovery.js';
import { deviceClaimControllers } from './device-claims.js';
import type {
  PciDeviceClaimObject,
  PciDeviceObject,
  UsbDeviceClaimObject,
  UsbDeviceObject,
} from './device-types.js';

export { FINALIZER_PCI_CLAIM, FINALIZER_USB_CLAIM, VFIO_PCI } from './device-claims.js';
export const ANNOTATION_DEVICE_ALLOCATION = 'harvesterhci.io/deviceAllocationDetails';

/** What the scheduler and the kubelet's device manager decide for launcher pods. */
export interface Placement {
  /** Why the pod cannot be bound to the sandbox node now, as kube-scheduler words it; undefined when it fits. */
  unschedulable(pod: Pod): string | undefined;
}

/** The scheduling controller's one key: it looks at every waiting VMI. */
const EVERY_WAITING_VMI = objectKey('', 'all');

const NOT_DEVICES = new Set(['cpu', 'memory', 'ephemeral-storage', 'pods']);

/** The device resources a pod asks for (KubeVirt puts one unit per host device in its limits). */
export function deviceRequests(pod: Pod): Map<string, number> {
  const wanted = new Map<string, number>();
  for (const c of pod.spec.containers) {
    const limits = (c as { resources?: { limits?: Record<string, string> } }).resources?.limits ?? {};
    for (const [name, quantity] of Object.entries(limits)) {
      if (NOT_DEVICES.has(name) || name.startsWith('hugepages-') || !name.includes('/')) continue;
      wanted.set(name, (wanted.get(name) ?? 0) + Number(quantity));
    }
  }
  return wanted;
}

export interface DeviceStandIns {
  controllers: Controller[];
  placement: Placement;
}

export function pciDevicesStandIn(ctx: StandInContext, requeueVmi: (key: ObjectKey) => void): DeviceStandIns {
  const { client } = ctx;
  const devices = ctx.manager.cache<PciDeviceObject>({ type: Resources.pciDevice });
  const claims = ctx.manager.cache<PciDeviceClaimObject>({ type: Resources.pciDeviceClaim });
  const usbDevices = ctx.manager.cache<UsbDeviceObject>({ type: Resources.usbDevice });
  const usbClaims = ctx.manager.cache<UsbDeviceClaimObject>({ type: Resources.usbDeviceClaim });
  const pods = ctx.manager.cache<Pod>({ type: ExtraResources.pod, labelSelector: POD_SELECTOR });
  const vmis = ctx.manager.cache<VirtualMachineInstance>({ type: Resources.virtualMachineInstance });
  const vms = ctx.manager.cache<VirtualMachine>({ type: Resources.virtualMachine });

  const claimControllers = deviceClaimControllers(ctx, { devices, claims, usbDevices, usbClaims });

  /** Each node resource and the devices behind it that the device plugins offer. */
  function offered(node: string): Map<string, string[]> {
    const byResource = new Map<string, string[]>();
    const add = (resource: string | undefined, name: string | undefined): void => {
      if (resource && name) byResource.set(resource, [...(byResource.get(resource) ?? []), name]);
    };
    const enabledClaims = claims.list(
      (c) => c.status?.passthroughEnabled === true && !c.metadata.deletionTimestamp,
    );
    for (const d of devices.list((d) => d.status?.nodeName === node)) {
      if (enabledClaims.some((c) => c.spec?.nodeName === node && c.spec.address === d.status?.address))
        add(d.status?.resourceName, d.metadata.name);
    }
    for (const d of usbDevices.list((d) => d.status?.nodeName === node && d.status.enabled === true))
      add(d.status?.resourceName, d.metadata.name);
    if (node === SANDBOX_NODE) for (const v of SANDBOX_VGPUS) add(v.resourceName, v.device);
    for (const list of byResource.values()) list.sort();
    return byResource;
  }

  const isLauncher = (p: Pod): boolean => p.metadata.labels?.[Labels.kubevirtApp] === LAUNCHER;
  const byAge = (a: Pod, b: Pod): number =>
    (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
    a.metadata.name.localeCompare(b.metadata.name);

  /** The kubelet's device manager: bound pods get free devices of each resource, oldest pod first. */
  function allocations(node: string, except?: string): Map<string, Map<string, string[]>> {
    const free = offered(node);
    const result = new Map<string, Map<string, string[]>>();
    for (const pod of pods.list((p) => isLauncher(p) && p.spec.nodeName === node).sort(byAge)) {
      if (pod.metadata.uid === except) continue;
      const given = new Map<string, string[]>();
      for (const [resource, count] of deviceRequests(pod)) {
        const pool = free.get(resource) ?? [];
        given.set(resource, pool.splice(0, count));
      }
      result.set(pod.metadata.uid ?? '', given);
    }
    return result;
  }

  const placement: Placement = {
    unschedulable(pod) {
      const wanted = deviceRequests(pod);
      if (wanted.size === 0) return undefined;
      const taken = new Map<string, number>();
      for (const given of allocations(SANDBOX_NODE, pod.metadata.uid).values())
        for (const [resource, names] of given) taken.set(resource, (taken.get(resource) ?? 0) + names.length);
      const short = [...wanted].filter(
        ([resource, count]) =>
          (offered(SANDBOX_NODE).get(resource)?.length ?? 0) - (taken.get(resource) ?? 0) < count,
      );
      if (short.length === 0) return undefined;
      return `0/1 nodes are available: ${short.map(([r]) => `1 Insufficient ${r}`).join(', ')}.`;
    },
  };

  // Any change of what the nodes offer, or a pod going, may let a waiting launcher pod fit.
  const scheduler = ctx.manager
    .controller('pcidevices-scheduling', {
      reconcile: () => {
        for (const vmi of vmis.list((v) => v.status?.phase === 'Scheduling' || v.status?.phase === 'Pending'))
          requeueVmi(keyOf(vmi));
        return Promise.resolve();
      },
      logger: ctx.logger.child({ controller: 'pcidevices-scheduling' }),
    })
    .watch(claims, () => EVERY_WAITING_VMI)
    .watch(usbDevices, () => EVERY_WAITING_VMI)
    .watch(devices, () => EVERY_WAITING_VMI)
    .watch(pods, (e) => (e.type === 'DELETED' ? EVERY_WAITING_VMI : undefined));

  const allocationRecorder = ctx.manager
    .controller('pcidevices-vm', {
      reconcile: async (key) => {
        const vmi = vmis.get(key);
        const vm = vms.get(key);
        if (!vmi || !vm || vmi.metadata.deletionTimestamp || vmi.status?.phase !== 'Running') return;
        const hostDevices =
          (vmi.spec.domain.devices?.hostDevices as Array<{ deviceName?: string }> | undefined) ?? [];
        let record: string | undefined;
        if (hostDevices.length > 0) {
          const launcher = pods.list(
            (p) => isLauncher(p) && p.metadata.labels?.[Labels.createdBy] === vmi.metadata.uid,
          )[0];
          if (!launcher?.spec.nodeName) return;
          const given =
            allocations(launcher.spec.nodeName).get(launcher.metadata.uid ?? '') ??
            new Map<string, string[]>();
          const pciNames = new Set(devices.list().map((d) => d.metadata.name));
          // Only PCI devices are recorded (the controller reads the pod's PCI_RESOURCE_* variables).
          const pci = [...given]
            .map(([resource, names]) => [resource, names.filter((n) => pciNames.has(n))] as const)
            .filter(([, names]) => names.length > 0)
            .sort(([a], [b]) => a.localeCompare(b));
          if (pci.length > 0) record = JSON.stringify({ hostdevices: Object.fromEntries(pci) });
        }
        const current = vm.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION];
        if (current === record || (record === undefined && current === undefined)) return;
        await mergePatchWithRetry(client, Resources.virtualMachine, vm, refOf(vm), (fresh) =>
          fresh.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION] === record
            ? undefined
            : { metadata: { annotations: { [ANNOTATION_DEVICE_ALLOCATION]: record ?? null } } },
        );
      },
      logger: ctx.logger.child({ controller: 'pcidevices-vm' }),
    })
    .watch(vmis);

  return {
    controllers: [...claimControllers, scheduler, allocationRecorder],
    placement,
  };
}
