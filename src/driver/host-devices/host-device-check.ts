// PreCreateCheck's part for --harvester-host-device-info: list what Harvester's pcidevices
// add-on knows (devices, claims) and the VMs of the machine's namespace, then let the pure
// decision refuse a device no node can give. A credential that may not read the device
// lists does not block the create: Harvester's own webhook still checks the resource name
// when the VM is created; the warning says which rule would enable this check.
import { hostDeviceNameProblems } from '../../harvester/host-devices/host-devices.js';
import {
  hostDeviceVerdict,
  type DeviceInventory,
  type PciDevice,
  type PciDeviceClaim,
  type UsbDevice,
} from '../../harvester/host-devices/host-device-availability.js';
import { isForbidden, isNotFound } from '../../kube/errors.js';
import { hostDeviceKindName, type HostDeviceKind } from '../../harvester-access/harvester-api.js';
import { vmRef, type OperationContext } from '../operations/context.js';

const FLAG = '--harvester-host-device-info';

type Listed<T> = { items: T[] } | { forbidden: string } | { absent: true };

async function listDevices<T>(ctx: OperationContext, kind: HostDeviceKind): Promise<Listed<T>> {
  try {
    return { items: await ctx.api.listHostDevices<T & { metadata: { name: string } }>(kind) };
  } catch (err) {
    if (isForbidden(err)) return { forbidden: hostDeviceKindName(kind) };
    // The resource type does not exist: the add-on is not enabled (or, for USB, too old).
    if (isNotFound(err)) return { absent: true };
    throw err;
  }
}

const itemsOf = <T>(l: Listed<T>): T[] | undefined =>
  'items' in l ? l.items : 'absent' in l ? [] : undefined;

export async function checkHostDevices(ctx: OperationContext, problems: string[]): Promise<void> {
  const info = ctx.config.HostDeviceInfo;
  if (!info || info.hostDevices.length === 0) return;
  // checkServer ran first: ServerVersion is this Harvester's.
  const names = hostDeviceNameProblems(info, ctx.config.ServerVersion || undefined);
  problems.push(...names.map((p) => `${p} (${FLAG})`));
  const [pci, claims, usb] = await Promise.all([
    listDevices<PciDevice>(ctx, 'pciDevice'),
    listDevices<PciDeviceClaim>(ctx, 'pciDeviceClaim'),
    listDevices<UsbDevice>(ctx, 'usbDevice'),
  ]);
  if ('absent' in pci && 'absent' in usb) {
    problems.push(
      `${FLAG}: Harvester has no ${hostDeviceKindName('pciDevice')}: enable the pcidevices-controller add-on (Advanced > Add-ons) and passthrough on the devices first`,
    );
    return;
  }
  const forbidden = [pci, claims, usb].flatMap((l) => ('forbidden' in l ? [l.forbidden] : []));
  if (forbidden.length > 0) {
    ctx.log.warn(
      `${FLAG} not checked before create: the credential may not list ${forbidden.join(', ')} ` +
        `(grant it "list" on them cluster-wide, group devices.harvesterhci.io, to have the devices checked); ` +
        'Harvester checks the resource names when the VM is created, and a VM whose device no node offers stays unscheduled',
    );
  }
  const inventory: DeviceInventory = {
    pciDevices: itemsOf(pci),
    // Without the claims no device is known to be enabled: treat the PCI list as unreadable.
    pciClaims: itemsOf(claims),
    usbDevices: itemsOf(usb),
    vms: await ctx.api.listVms(ctx.config.VMNamespace),
  };
  if (inventory.pciClaims === undefined) inventory.pciDevices = undefined;
  if (inventory.pciDevices === undefined && inventory.usbDevices === undefined) return;
  const verdict = hostDeviceVerdict(info, inventory, vmRef(ctx.config));
  for (const note of verdict.notes) ctx.log.warn(`${FLAG}: ${note}`);
  problems.push(...verdict.problems.map((p) => `${p} (${FLAG})`));
}
