// Can the requested host devices be placed? A pure decision over what Harvester lists:
// its PCIDevices and PCIDeviceClaims, its USBDevices, and the VMs the credential can see.
// A VM's host devices all come from the node its launcher pod runs on, and a node offers a
// device only once passthrough is enabled on it (a claim the pcidevices controller has
// acted on): docs/upstream/harvester-host-devices.md#claims-and-passthrough.
// The decision refuses only what cannot work; what it cannot see (VMs of other namespaces,
// a list the credential may not read) never causes a refusal.
import type { PciDevice, PciDeviceClaim, UsbDevice } from '../../api/harvester.js';
import type { ObjectMeta } from '../../api/meta.js';
import type { GoHostDeviceInfo } from '../config/go-config.js';
import { keyText } from '../../api/object-key.js';

export const ANNOTATION_DEVICE_ALLOCATION = 'harvesterhci.io/deviceAllocationDetails';

export type { PciDevice, PciDeviceClaim, UsbDevice } from '../../api/harvester.js';

export interface DeviceUsingVm {
  metadata: ObjectMeta;
  spec?: {
    template?: {
      spec?: { domain?: { devices?: { hostDevices?: Array<{ name?: string; deviceName?: string }> } } };
    };
  };
}

/** What could be listed; `undefined` = not available (forbidden). */
export interface DeviceInventory {
  pciDevices: PciDevice[] | undefined;
  pciClaims: PciDeviceClaim[] | undefined;
  usbDevices: UsbDevice[] | undefined;
  vms: DeviceUsingVm[];
}

export interface HostDeviceVerdict {
  /** Each makes PreCreateCheck refuse. */
  problems: string[];
  /** Worth a warning, never a refusal. */
  notes: string[];
}

type State = 'not-enabled' | 'pending' | 'enabled';

interface Candidate {
  kind: 'PCI' | 'USB';
  name: string;
  node: string;
  resourceName: string;
  state: State;
  claimedBy: string;
  usedBy?: string;
}

const MAX_LISTED = 10;
const vmRef = (m: ObjectMeta): string => keyText(m.namespace, m.name);

/** Device object name → the VM using it: Harvester's allocation record, or a VM naming it. */
function devicesInUse(vms: readonly DeviceUsingVm[], self: string): Map<string, string> {
  const used = new Map<string, string>();
  for (const vm of vms) {
    const ref = vmRef(vm.metadata);
    if (ref === self) continue;
    for (const d of vm.spec?.template?.spec?.domain?.devices?.hostDevices ?? []) {
      if (d.name) used.set(d.name, ref);
    }
    const record = vm.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION];
    if (!record) continue;
    try {
      const parsed = JSON.parse(record) as { hostdevices?: Record<string, unknown> };
      for (const names of Object.values(parsed.hostdevices ?? {})) {
        if (Array.isArray(names)) for (const n of names) if (typeof n === 'string') used.set(n, ref);
      }
    } catch {
      // a record we cannot read says nothing
    }
  }
  return used;
}

/** USB resources name one physical device: any other VM asking for it holds it. */
function usbResourcesInUse(vms: readonly DeviceUsingVm[], self: string): Map<string, string> {
  const used = new Map<string, string>();
  for (const vm of vms) {
    const ref = vmRef(vm.metadata);
    if (ref === self) continue;
    for (const d of vm.spec?.template?.spec?.domain?.devices?.hostDevices ?? []) {
      if (d.deviceName) used.set(d.deviceName, ref);
    }
  }
  return used;
}

function pciCandidates(inv: DeviceInventory, used: ReadonlyMap<string, string>): Candidate[] {
  const claims = (inv.pciClaims ?? []).filter((c) => !c.metadata.deletionTimestamp);
  return (inv.pciDevices ?? []).map((d): Candidate => {
    const node = d.status?.nodeName ?? '';
    // The UI's match: a claim for this node and PCI address (its name is the device's by convention).
    const claim = claims.find((c) => c.spec?.nodeName === node && c.spec?.address === d.status?.address);
    const name = d.metadata.name;
    const usedBy = used.get(name);
    return {
      kind: 'PCI',
      name,
      node,
      resourceName: d.status?.resourceName ?? '',
      state: !claim ? 'not-enabled' : claim.status?.passthroughEnabled ? 'enabled' : 'pending',
      claimedBy: claim?.spec?.userName ?? '',
      ...(usedBy ? { usedBy } : {}),
    };
  });
}

function usbCandidates(
  inv: DeviceInventory,
  used: ReadonlyMap<string, string>,
  usbUsed: ReadonlyMap<string, string>,
): Candidate[] {
  return (inv.usbDevices ?? []).map((d): Candidate => {
    const name = d.metadata.name;
    const resourceName = d.status?.resourceName ?? '';
    const usedBy = used.get(name) ?? usbUsed.get(resourceName);
    return {
      kind: 'USB',
      name,
      node: d.status?.nodeName ?? '',
      resourceName,
      state: d.status?.enabled ? 'enabled' : 'not-enabled',
      claimedBy: '',
      ...(usedBy ? { usedBy } : {}),
    };
  });
}

function candidates(inv: DeviceInventory, self: string): Candidate[] {
  const used = devicesInUse(inv.vms, self);
  return [...pciCandidates(inv, used), ...usbCandidates(inv, used, usbResourcesInUse(inv.vms, self))];
}

const isFree = (c: Candidate): boolean => c.state === 'enabled' && c.usedBy === undefined;

function describe(c: Candidate): string {
  if (c.state === 'not-enabled')
    return `${c.name} not enabled for passthrough${c.kind === 'PCI' ? ' (no PCIDeviceClaim)' : ''}`;
  if (c.state === 'pending')
    return `${c.name} claimed${c.claimedBy ? ` by ${c.claimedBy}` : ''}, passthrough not enabled yet`;
  return c.usedBy ? `${c.name} in use by VM ${c.usedBy}` : `${c.name} enabled and free`;
}

/** "node-1: a (…), b (…); node-2: c (…)", at most MAX_LISTED devices. */
function byNode(list: readonly Candidate[]): string {
  const nodes = new Map<string, string[]>();
  for (const c of list.slice(0, MAX_LISTED)) nodes.set(c.node, [...(nodes.get(c.node) ?? []), describe(c)]);
  const text = [...nodes]
    .map(([node, devices]) => `${node || '(no node)'}: ${devices.join(', ')}`)
    .join('; ');
  return list.length > MAX_LISTED ? `${text}; and ${list.length - MAX_LISTED} more` : text;
}

function freeOn(list: readonly Candidate[], node: string): number {
  return list.filter((c) => c.node === node && isFree(c)).length;
}

const ENABLE_HINT =
  'enable passthrough in the Harvester UI (Advanced > PCI Devices or USB Devices > Enable Passthrough), or free a device';

/**
 * Refuses a request no node can serve: a resource name no device has, or no node with
 * enough of it enabled and free, or no single node with all of them (a VM's devices all
 * come from one node). `self` is the VM being created ("namespace/name"): a VM left by an
 * earlier attempt of this create does not count as a user of its own devices.
 */
export function hostDeviceVerdict(
  info: GoHostDeviceInfo,
  inv: DeviceInventory,
  self: string,
): HostDeviceVerdict {
  const problems: string[] = [];
  const notes: string[] = [];
  const all = candidates(inv, self);
  const incomplete = inv.pciDevices === undefined || inv.usbDevices === undefined;
  const wanted = new Map<string, string[]>();
  for (const d of info.hostDevices) wanted.set(d.deviceName, [...(wanted.get(d.deviceName) ?? []), d.name]);

  const placeable: Array<{ resourceName: string; count: number; list: Candidate[] }> = [];
  for (const [resourceName, names] of wanted) {
    const count = names.length;
    const what = `host device${count > 1 ? 's' : ''} ${names.join(', ')} (${count > 1 ? `${count} × ` : ''}${resourceName})`;
    const list = all.filter((c) => c.resourceName === resourceName);
    if (list.length === 0) {
      if (incomplete) {
        notes.push(
          `${what} not checked: no listed device has that resource name, and not every device list could be read`,
        );
        continue;
      }
      const enabled = [...new Set(all.filter((c) => c.state === 'enabled').map((c) => c.resourceName))];
      problems.push(
        `${what}: no PCI or USB device on Harvester has this resource name; ` +
          (enabled.length > 0
            ? `devices enabled for passthrough have ${enabled.slice(0, MAX_LISTED).join(', ')}`
            : 'no device is enabled for passthrough'),
      );
      continue;
    }
    const nodes = [...new Set(list.map((c) => c.node))];
    if (!nodes.some((n) => freeOn(list, n) >= count)) {
      const need =
        count > 1
          ? `${count} of them enabled for passthrough and free`
          : 'it enabled for passthrough and free';
      problems.push(`${what}: no node has ${need} — ${byNode(list)}; ${ENABLE_HINT}`);
      continue;
    }
    placeable.push({ resourceName, count, list });
    for (const usb of list.filter((c) => c.kind === 'USB')) {
      if (!names.includes(usb.name)) {
        notes.push(
          `host device ${names.join(', ')} (${resourceName}) is the USB device ${usb.name}: naming the entry "${usb.name}" lets Harvester refuse to disable its passthrough while the VM uses it`,
        );
      }
    }
  }
  if (problems.length === 0 && placeable.length > 1) {
    const nodes = [...new Set(placeable.flatMap((p) => p.list.map((c) => c.node)))];
    const fits = nodes.filter((n) => placeable.every((p) => freeOn(p.list, n) >= p.count));
    if (fits.length === 0) {
      const offers = nodes
        .slice(0, MAX_LISTED)
        .map((n) => {
          const free = placeable.filter((p) => freeOn(p.list, n) >= p.count).map((p) => p.resourceName);
          return `${n || '(no node)'} has ${free.length > 0 ? free.join(', ') : 'none of them'} free`;
        })
        .join('; ');
      problems.push(
        `host devices ${placeable.map((p) => p.resourceName).join(', ')}: a VM's devices all come from one node, and no node has all of them enabled and free — ${offers}`,
      );
    }
  }
  return { problems, notes };
}
