// The pcidevices add-on's edits of the KubeVirt CR's `permittedHostDevices` (harvester/pcidevices
// v1.8.0: the PCI claim's reconcileKubevirtCR, the USB claim's updateKubeVirt and its OnRemove):
// without an entry for a device's resource, virt-controller refuses to render the launcher pod
// of a VMI that asks for it (docs/upstream/kubevirt.md#host-devices-and-permittedhostdevices).
import type { KubeVirt as KubeVirtCr, PermittedHostDevices } from '../../../src/api/kubevirt.js';
import { KubeVirtResources } from '../../kubevirt/resources.js';
import { KUBEVIRT_CR, KUBEVIRT_NAMESPACE } from '../../kubevirt/version.js';
import type { StandInContext } from '../context.js';
import { sameJson } from '../runtime.js';
import { updateWithRetry } from '../writes.js';

/** A vGPU's PCI function (NVIDIA A2 virtual function): what its claim would permit. */
export const VGPU_VENDOR_SELECTOR = '10de:25b6';

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

/**
 * The add-on updates the KubeVirt CR with a full Update of what it read; no CR: an error,
 * retried. Without KubeVirt in the sandbox (files that run no VM) there is nothing to permit.
 */
export async function updatePermitted(
  ctx: StandInContext,
  change: (p: PermittedHostDevices | undefined) => PermittedHostDevices,
): Promise<void> {
  if (!ctx.kubevirt) return;
  await updateWithRetry<KubeVirtCr>(
    ctx.client,
    KubeVirtResources.kubeVirt,
    undefined,
    { namespace: KUBEVIRT_NAMESPACE, name: KUBEVIRT_CR },
    (kv) => {
      const before = kv.spec.configuration?.permittedHostDevices;
      const after = change(before);
      if (sameJson(before, after)) return undefined;
      return {
        ...kv,
        spec: { ...kv.spec, configuration: { ...kv.spec.configuration, permittedHostDevices: after } },
      };
    },
  );
}
