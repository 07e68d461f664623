// The pcidevices add-on's two claim controllers (PCIDeviceClaim, USBDeviceClaim), one shape:
// wrangler's OnRemove finalizer on every claim; a claim being deleted gives its device back
// to the host, then drops the finalizer; otherwise, once its device is found, the device is
// handed to passthrough and the claim's status says so. What differs is each kind's part;
// both keep the KubeVirt CR's permittedHostDevices as the add-on does (a PCI entry is added and
// kept when its claim goes, a USB entry goes with its claim).
import type { Cache, Controller } from '../../../src/kube/manager.js';
import { Resources, type KubeObject, type ResourceType } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { patchFinalizers, refOf, updateWithRetry, withFinalizer, withoutFinalizer } from '../writes.js';
import { objectKey } from '../../../src/api/object-key.js';
import { ANNOTATION_PCI_DEVICE_DRIVER } from './device-discovery.js';
import {
  permitPciDevice,
  permitUsbDevice,
  unpermitUsbDevice,
  updatePermitted,
} from './permitted-host-devices.js';
import type {
  PciDeviceClaimObject,
  PciDeviceObject,
  UsbDeviceClaimObject,
  UsbDeviceObject,
} from './device-types.js';

export const VFIO_PCI = 'vfio-pci';
/** wrangler's OnRemove handlers "PCIDeviceClaimOnRemove" and "usbClaimClient-device-claim-remove". */
export const FINALIZER_PCI_CLAIM = 'wrangler.cattle.io/PCIDeviceClaimOnRemove';
export const FINALIZER_USB_CLAIM = 'wrangler.cattle.io/usbClaimClient-device-claim-remove';

interface ClaimKind<C extends KubeObject, D extends KubeObject> {
  controller: string;
  claimType: ResourceType;
  finalizer: string;
  claims: Cache<C>;
  deviceOf(claim: C): D | undefined;
  /** The claim cannot be acted on (the add-on logs it and leaves the claim as it is). */
  blocked(claim: C, device: D | undefined): boolean;
  /** The claim is gone: its device back to the host. */
  release(device: D): Promise<void>;
  /** The device to passthrough, and the claim's status saying so. */
  bind(claim: C, device: D): Promise<void>;
}

function claimController<C extends KubeObject, D extends KubeObject>(
  ctx: StandInContext,
  kind: ClaimKind<C, D>,
): Controller {
  const { client } = ctx;
  return ctx.manager
    .controller(kind.controller, {
      reconcile: async (key) => {
        const claim = kind.claims.get(key);
        if (!claim) return;
        const device = kind.deviceOf(claim);
        if (claim.metadata.deletionTimestamp) {
          if (device) await kind.release(device);
          await patchFinalizers(client, kind.claimType, claim, withoutFinalizer(kind.finalizer));
          return;
        }
        await patchFinalizers(client, kind.claimType, claim, withFinalizer(kind.finalizer));
        if (device && !kind.blocked(claim, device)) await kind.bind(claim, device);
      },
      logger: ctx.logger.child({ controller: kind.controller }),
    })
    .watch(kind.claims);
}

/** Writes `fields` into the object's status unless it holds them already (plus `extra` when it writes). */
async function setStatus<T extends KubeObject & { status?: object }>(
  ctx: StandInContext,
  type: ResourceType,
  obj: T,
  fields: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<void> {
  await updateWithRetry(
    ctx.client,
    type,
    obj,
    refOf(obj),
    (o) => {
      const status = (o.status ?? {}) as Record<string, unknown>;
      if (Object.entries(fields).every(([k, v]) => status[k] === v)) return undefined;
      return { ...o, status: { ...status, ...fields, ...extra } };
    },
    'status',
  );
}

export function deviceClaimControllers(
  ctx: StandInContext,
  caches: {
    devices: Cache<PciDeviceObject>;
    claims: Cache<PciDeviceClaimObject>;
    usbDevices: Cache<UsbDeviceObject>;
    usbClaims: Cache<UsbDeviceClaimObject>;
  },
): Controller[] {
  const kernelDriver = (d: PciDeviceObject, driver: string) =>
    setStatus(ctx, Resources.pciDevice, d, { kernelDriverInUse: driver });
  const usbEnabled = (d: UsbDeviceObject, enabled: boolean) =>
    setStatus(ctx, Resources.usbDevice, d, { enabled }, enabled ? { status: '', message: '' } : {});
  const pci = claimController<PciDeviceClaimObject, PciDeviceObject>(ctx, {
    controller: 'pcidevices-claim',
    claimType: Resources.pciDeviceClaim,
    finalizer: FINALIZER_PCI_CLAIM,
    claims: caches.claims,
    // The real controller finds the device through the claim's first owner reference.
    deviceOf: (claim) => {
      const name = claim.metadata.ownerReferences?.[0]?.name;
      return name ? caches.devices.get(objectKey('', name)) : undefined;
    },
    // "Cannot find PCIDevice that owns <claim>": the claim stays as it is, never enabled.
    blocked: () => false,
    release: (device) =>
      kernelDriver(device, device.metadata.annotations?.[ANNOTATION_PCI_DEVICE_DRIVER] ?? ''),
    bind: async (claim, device) => {
      await updatePermitted(ctx, (p) =>
        permitPciDevice(p, {
          resourceName: device.status?.resourceName ?? '',
          vendorSelector: `${device.status?.vendorId ?? ''}:${device.status?.deviceId ?? ''}`,
        }),
      );
      const before = device.status?.kernelDriverInUse ?? '';
      if (before !== VFIO_PCI) await kernelDriver(device, VFIO_PCI);
      await updateWithRetry<PciDeviceClaimObject>(
        ctx.client,
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
  });
  const usb = claimController<UsbDeviceClaimObject, UsbDeviceObject>(ctx, {
    controller: 'pcidevices-usb-claim',
    claimType: Resources.usbDeviceClaim,
    finalizer: FINALIZER_USB_CLAIM,
    claims: caches.usbClaims,
    deviceOf: (claim) => caches.usbDevices.get(objectKey('', claim.metadata.name)),
    // "usb device claim <name> has no owner reference": an error, retried, never enabled.
    blocked: (claim) => !claim.metadata.ownerReferences?.length,
    release: async (device) => {
      const resourceName = device.status?.resourceName;
      if (resourceName) await updatePermitted(ctx, (p) => unpermitUsbDevice(p, resourceName));
      await usbEnabled(device, false);
    },
    bind: async (claim, device) => {
      await updatePermitted(ctx, (p) =>
        permitUsbDevice(p, {
          resourceName: device.status?.resourceName ?? '',
          vendor: device.status?.vendorID ?? '',
          product: device.status?.productID ?? '',
        }),
      );
      await usbEnabled(device, true);
      const at = { nodeName: device.status?.nodeName ?? '', pciAddress: device.status?.pciAddress ?? '' };
      await updateWithRetry<UsbDeviceClaimObject>(
        ctx.client,
        Resources.usbDeviceClaim,
        undefined,
        refOf(claim),
        (c) =>
          c.status?.nodeName === device.status?.nodeName && c.status?.pciAddress === device.status?.pciAddress
            ? undefined
            : { ...c, status: at },
        'status',
      );
    },
  });
  return [pci, usb];
}
