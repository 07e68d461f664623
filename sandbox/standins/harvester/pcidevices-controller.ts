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
import { Resources } from '../../../src/kube/resources.js';
import { KubeVirtResources } from '../../kubevirt/resources.js';
import type { KubeVirtCr, PermittedHostDevices } from '../../kubevirt/kubevirt-cr.js';
import { KUBEVIRT_CR, KUBEVIRT_NAMESPACE } from '../../kubevirt/version.js';
import type { StandInContext } from '../context.js';
import { ExtraResources, Labels, SANDBOX_NODE } from '../names.js';
import type { DeviceOffer } from '../node/node-controller.js';
import { LAUNCHER } from '../node/kubelet.js';
import { Reconciler } from '../runtime.js';
import type { Pod, VirtualMachine, VirtualMachineInstance } from '../types.js';
import {
  mergePatchWithRetry,
  patchFinalizers,
  refOf,
  updateWithRetry,
  withFinalizer,
  withoutFinalizer,
} from '../writes.js';
import { ANNOTATION_PCI_DEVICE_DRIVER, SANDBOX_VGPUS } from './device-discovery.js';
import type {
  PciDeviceClaimObject,
  PciDeviceObject,
  UsbDeviceClaimObject,
  UsbDeviceObject,
} from './device-types.js';

export const VFIO_PCI = 'vfio-pci';
export const ANNOTATION_DEVICE_ALLOCATION = 'harvesterhci.io/deviceAllocationDetails';
/** wrangler's OnRemove handlers "PCIDeviceClaimOnRemove" and "usbClaimClient-device-claim-remove". */
export const FINALIZER_PCI_CLAIM = 'wrangler.cattle.io/PCIDeviceClaimOnRemove';
export const FINALIZER_USB_CLAIM = 'wrangler.cattle.io/usbClaimClient-device-claim-remove';

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
  reconcilers: Reconciler[];
  offer: DeviceOffer;
}

/** A vGPU's PCI function (NVIDIA A2 virtual function): what its claim would permit. */
const VGPU_VENDOR_SELECTOR = '10de:25b6';

/** reconcileKubevirtCR: the device's entry (re)added unless an external-provider one is there. */
export function permitPciDevice(
  permitted: PermittedHostDevices | undefined,
  device: { resourceName: string; vendorSelector: string },
): PermittedHostDevices {
  const next = { ...permitted, pciHostDevices: [...(permitted?.pciHostDevices ?? [])] };
  const i = next.pciHostDevices.findIndex((d) => d.resourceName === device.resourceName);
  if (i >= 0 && next.pciHostDevices[i]?.externalResourceProvider) return next;
  if (i >= 0) next.pciHostDevices.splice(i, 1);
  next.pciHostDevices.push({
    pciVendorSelector: device.vendorSelector,
    resourceName: device.resourceName,
    externalResourceProvider: true,
  });
  return next;
}

/** updateKubeVirt (USB claim): added once per resource name. */
export function permitUsbDevice(
  permitted: PermittedHostDevices | undefined,
  device: { resourceName: string; vendor: string; product: string },
): PermittedHostDevices {
  const usb = [...(permitted?.usb ?? [])];
  if (!usb.some((u) => u.resourceName === device.resourceName))
    usb.push({
      selectors: [{ vendor: device.vendor, product: device.product }],
      resourceName: device.resourceName,
      externalResourceProvider: true,
    });
  return { ...permitted, usb };
}

/** The USB claim's OnRemove: its entry goes. */
export function unpermitUsbDevice(
  permitted: PermittedHostDevices | undefined,
  resourceName: string,
): PermittedHostDevices {
  return { ...permitted, usb: (permitted?.usb ?? []).filter((u) => u.resourceName !== resourceName) };
}

export function pciDevicesStandIn(ctx: StandInContext): DeviceStandIns {
  const { client } = ctx;
  const devices = ctx.informers.get<PciDeviceObject>(Resources.pciDevice);
  const claims = ctx.informers.get<PciDeviceClaimObject>(Resources.pciDeviceClaim);
  const usbDevices = ctx.informers.get<UsbDeviceObject>(Resources.usbDevice);
  const usbClaims = ctx.informers.get<UsbDeviceClaimObject>(Resources.usbDeviceClaim);
  const pods = ctx.informers.get<Pod>(ExtraResources.pod);
  const vmis = ctx.informers.get<VirtualMachineInstance>(Resources.virtualMachineInstance);
  const vms = ctx.informers.get<VirtualMachine>(Resources.virtualMachine);

  /**
   * The add-on updates the KubeVirt CR with a full Update of what it read; no CR: an error,
   * retried. Without KubeVirt in the sandbox (files that run no VM) there is nothing to permit.
   */
  async function updatePermitted(
    change: (p: PermittedHostDevices | undefined) => PermittedHostDevices,
  ): Promise<void> {
    if (!ctx.kubevirt) return;
    await updateWithRetry<KubeVirtCr>(
      client,
      KubeVirtResources.kubeVirt,
      undefined,
      { namespace: KUBEVIRT_NAMESPACE, name: KUBEVIRT_CR },
      (kv) => {
        const before = kv.spec.configuration?.permittedHostDevices;
        const after = change(before);
        if (JSON.stringify(before) === JSON.stringify(after)) return undefined;
        return {
          ...kv,
          spec: { ...kv.spec, configuration: { ...kv.spec.configuration, permittedHostDevices: after } },
        };
      },
    );
  }

  const pciClaimController = new Reconciler(
    'pcidevices-claim',
    async (key) => {
      const claim = claims.get(key);
      if (!claim) return;
      // The real controller finds the device through the claim's first owner reference.
      const deviceName = claim.metadata.ownerReferences?.[0]?.name;
      const device = deviceName ? devices.get(deviceName) : undefined;
      if (claim.metadata.deletionTimestamp) {
        if (device) {
          const original = device.metadata.annotations?.[ANNOTATION_PCI_DEVICE_DRIVER] ?? '';
          await updateWithRetry(
            client,
            Resources.pciDevice,
            device,
            refOf(device),
            (d) =>
              d.status?.kernelDriverInUse === original
                ? undefined
                : { ...d, status: { ...d.status, kernelDriverInUse: original } },
            'status',
          );
        }
        await patchFinalizers(client, Resources.pciDeviceClaim, claim, withoutFinalizer(FINALIZER_PCI_CLAIM));
        return;
      }
      await patchFinalizers(client, Resources.pciDeviceClaim, claim, withFinalizer(FINALIZER_PCI_CLAIM));
      // "Cannot find PCIDevice that owns <claim>": the claim stays as it is, never enabled.
      if (!device) return;
      await updatePermitted((p) =>
        permitPciDevice(p, {
          resourceName: device.status?.resourceName ?? '',
          vendorSelector: `${device.status?.vendorId ?? ''}:${device.status?.deviceId ?? ''}`,
        }),
      );
      const before = device.status?.kernelDriverInUse ?? '';
      if (before !== VFIO_PCI) {
        await updateWithRetry(
          client,
          Resources.pciDevice,
          device,
          refOf(device),
          (d) =>
            d.status?.kernelDriverInUse === VFIO_PCI
              ? undefined
              : { ...d, status: { ...d.status, kernelDriverInUse: VFIO_PCI } },
          'status',
        );
      }
      await updateWithRetry<PciDeviceClaimObject>(
        client,
        Resources.pciDeviceClaim,
        undefined,
        refOf(claim),
        (c) =>
          c.status?.passthroughEnabled
            ? undefined
            : { ...c, status: { passthroughEnabled: true, kernelDriverToUnbind: before } },
        'status',
      );
    },
    ctx.logger.child({ controller: 'pcidevices-claim' }),
  ).watch(claims);

  const usbClaimController = new Reconciler(
    'pcidevices-usb-claim',
    async (key) => {
      const claim = usbClaims.get(key);
      if (!claim) return;
      const device = usbDevices.get(claim.metadata.name ?? '');
      const setEnabled = async (enabled: boolean): Promise<void> => {
        if (!device) return;
        await updateWithRetry(
          client,
          Resources.usbDevice,
          device,
          refOf(device),
          (d) =>
            d.status?.enabled === enabled
              ? undefined
              : { ...d, status: { ...d.status, enabled, ...(enabled ? { status: '', message: '' } : {}) } },
          'status',
        );
      };
      if (claim.metadata.deletionTimestamp) {
        if (device?.status?.resourceName) {
          const resourceName = device.status.resourceName;
          await updatePermitted((p) => unpermitUsbDevice(p, resourceName));
        }
        await setEnabled(false);
        await patchFinalizers(client, Resources.usbDeviceClaim, claim, withoutFinalizer(FINALIZER_USB_CLAIM));
        return;
      }
      await patchFinalizers(client, Resources.usbDeviceClaim, claim, withFinalizer(FINALIZER_USB_CLAIM));
      // "usb device claim <name> has no owner reference": an error, retried, never enabled.
      if (!claim.metadata.ownerReferences?.length || !device) return;
      await updatePermitted((p) =>
        permitUsbDevice(p, {
          resourceName: device.status?.resourceName ?? '',
          vendor: device.status?.vendorID ?? '',
          product: device.status?.productID ?? '',
        }),
      );
      await setEnabled(true);
      await updateWithRetry<UsbDeviceClaimObject>(
        client,
        Resources.usbDeviceClaim,
        undefined,
        refOf(claim),
        (c) =>
          c.status?.nodeName === device.status?.nodeName && c.status?.pciAddress === device.status?.pciAddress
            ? undefined
            : {
                ...c,
                status: {
                  nodeName: device.status?.nodeName ?? '',
                  pciAddress: device.status?.pciAddress ?? '',
                },
              },
        'status',
      );
    },
    ctx.logger.child({ controller: 'pcidevices-usb-claim' }),
  ).watch(usbClaims);

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
    (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');

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

  // The vGPUs are enabled from the start: their claims (the vGPU controller's) permit them.
  const vgpuPermits = new Reconciler(
    'pcidevices-vgpu',
    () =>
      updatePermitted((p) => {
        let next = p ?? {};
        for (const v of SANDBOX_VGPUS)
          next = permitPciDevice(next, {
            resourceName: v.resourceName,
            vendorSelector: VGPU_VENDOR_SELECTOR,
          });
        return next;
      }),
    ctx.logger.child({ controller: 'pcidevices-vgpu' }),
  );
  vgpuPermits.enqueue('vgpus');

  const allocationRecorder = new Reconciler(
    'pcidevices-vm',
    async (key) => {
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
          allocations(launcher.spec.nodeName).get(launcher.metadata.uid ?? '') ?? new Map<string, string[]>();
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
    ctx.logger.child({ controller: 'pcidevices-vm' }),
  ).watch(vmis);

  return {
    reconcilers: [pciClaimController, usbClaimController, vgpuPermits, allocationRecorder],
    offer: {
      offered,
      onChange: (listener) => {
        for (const informer of [claims, usbDevices, devices] as const) informer.on(() => listener());
      },
    },
  };
}
