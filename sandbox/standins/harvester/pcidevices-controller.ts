// Harvester's pcidevices-controller add-on (harvester/pcidevices v1.8.0), as far as the
// driver can see it (docs/upstream/harvester-host-devices.md):
// - the PCIDeviceClaim controller: a claim owned by its PCIDevice permits the device's
//   vendor:device in the KubeVirt CR (`permittedHostDevices.pciHostDevices`, kept when the claim
//   goes, as upstream keeps it), binds the device to vfio-pci (PCIDevice
//   status.kernelDriverInUse), hands it to the device plugin and sets status.passthroughEnabled;
//   its removal gives the device back to its original driver;
// - the USBDeviceClaim controller: `permittedHostDevices.usb` (removed with the claim),
//   USBDevice status.enabled, the claim's nodeName/pciAddress;
// - the device plugins: a node offers a resource for each enabled device (`offer`, which the
//   node stand-in reports as the Node's allocatable, so kube-scheduler places launcher pods by
//   it), and the kubelet's device manager gives a bound pod specific devices;
// - vGPUs only as a fixed offer of the sandbox node (SANDBOX_VGPUS), permitted as the vGPU
//   controller's PCIDeviceClaims would permit them;
// - the VM controller: `harvesterhci.io/deviceAllocationDetails` on the VM of a Running VMI,
//   the PCI devices its pod was given.
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Labels, SANDBOX_NODE } from '../names.js';
import { LAUNCHER, VMI_PODS } from '../node/kubelet.js';
import type { DeviceOffer } from '../node/node-controller.js';
import type { Pod, VirtualMachine, VirtualMachineInstance } from '../types.js';
import { mergePatchWithRetry, refOf } from '../writes.js';
import { SANDBOX_VGPUS } from './device-discovery.js';
import { deviceClaimControllers } from './device-claims.js';
import type {
  PciDeviceClaimObject,
  PciDeviceObject,
  UsbDeviceClaimObject,
  UsbDeviceObject,
} from './device-types.js';
import { VGPU_VENDOR_SELECTOR, permitPciDevice, updatePermitted } from './permitted-host-devices.js';

export { FINALIZER_PCI_CLAIM, FINALIZER_USB_CLAIM, VFIO_PCI } from './device-claims.js';

export const ANNOTATION_DEVICE_ALLOCATION = 'harvesterhci.io/deviceAllocationDetails';
/** The vGPU permits' one key. */
const VGPUS = { namespace: '', name: 'vgpus' };

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
  offer: DeviceOffer;
}

export function pciDevicesStandIn(ctx: StandInContext): DeviceStandIns {
  const { client } = ctx;
  const devices = ctx.manager.cache<PciDeviceObject>({ type: Resources.pciDevice });
  const claims = ctx.manager.cache<PciDeviceClaimObject>({ type: Resources.pciDeviceClaim });
  const usbDevices = ctx.manager.cache<UsbDeviceObject>({ type: Resources.usbDevice });
  const usbClaims = ctx.manager.cache<UsbDeviceClaimObject>({ type: Resources.usbDeviceClaim });
  const pods = ctx.manager.cache<Pod>(VMI_PODS);
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
  function allocations(node: string): Map<string, Map<string, string[]>> {
    const free = offered(node);
    const result = new Map<string, Map<string, string[]>>();
    for (const pod of pods.list((p) => isLauncher(p) && p.spec.nodeName === node).sort(byAge)) {
      const given = new Map<string, string[]>();
      for (const [resource, count] of deviceRequests(pod)) {
        const pool = free.get(resource) ?? [];
        given.set(resource, pool.splice(0, count));
      }
      result.set(pod.metadata.uid ?? '', given);
    }
    return result;
  }

  // The vGPUs are enabled from the start: their claims (the vGPU controller's) permit them.
  const vgpuPermits = ctx.manager.controller('pcidevices-vgpu', {
    reconcile: () =>
      updatePermitted(ctx, (p) =>
        SANDBOX_VGPUS.reduce(
          (next, v) =>
            permitPciDevice(next, { resourceName: v.resourceName, vendorSelector: VGPU_VENDOR_SELECTOR }),
          p ?? {},
        ),
      ),
  });
  vgpuPermits.enqueue(VGPUS);

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
    })
    .watch(vmis);

  return {
    controllers: [...claimControllers, vgpuPermits, allocationRecorder],
    offer: { offered, sources: [claims, usbDevices, devices] },
  };
}
