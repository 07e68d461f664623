// Pure pieces of the VMI status virt-handler writes from the domain it runs (kubevirt v1.7.0
// pkg/virt-handler: vm.go, the domain's disks and interfaces, and the guest agent's report):
// disk targets, the hot-plug phases after virt-controller's AttachedToNode, interfaces.
import type { VirtualMachineInstance, VmiInterfaceStatus, VolumeStatus } from '../types.js';
import type { GuestAddresses } from './guest-addresses.js';

/** Disk target names the way libvirt assigns them per bus: vda, vdb, ... / sda, sdb, ... */
export function targetName(bus: string | undefined, index: number): string {
  const prefix = bus === 'scsi' || bus === 'sata' || bus === 'usb' ? 'sd' : 'vd';
  let letters = '';
  let n = index;
  do {
    letters = String.fromCharCode(97 + (n % 26)) + letters;
    n = Math.floor(n / 26) - 1;
  } while (n >= 0);
  return prefix + letters;
}

function busOf(vmi: VirtualMachineInstance, name: string): string | undefined {
  const disk = vmi.spec.domain.devices?.disks?.find((d) => d.name === name);
  return disk?.disk?.bus ?? disk?.cdrom?.bus ?? disk?.lun?.bus;
}

/** The next free target on this disk's bus, given the targets already in use. */
export function nextTarget(vmi: VirtualMachineInstance, name: string, used: string[]): string {
  const bus = busOf(vmi, name);
  const prefix = targetName(bus, 0).slice(0, 2);
  const taken = new Set(used.filter((t) => t.slice(0, 2) === prefix));
  for (let i = 0; ; i++) if (!taken.has(targetName(bus, i))) return targetName(bus, i);
}

const hasDisk = (vmi: VirtualMachineInstance, name: string): boolean =>
  (vmi.spec.domain.devices?.disks ?? []).some((d) => d.name === name);

/**
 * virt-handler's updateVolumeStatusesFromDomain once the domain runs, sorted by name: every disk
 * of the domain has its target. A hot-plugged volume whose attachment pod is ready
 * (virt-controller recorded its UID) is mounted into the launcher (MountedToPod) and, on the next
 * pass, attached to the domain (Ready, with a target); one gone from the spec is detached and
 * unmounted (UnMountedFromPod), after which virt-controller deletes its attachment pod.
 */
export function domainVolumeStatuses(vmi: VirtualMachineInstance): VolumeStatus[] {
  const statuses = (vmi.status?.volumeStatus ?? []).map((s) => ({ ...s }));
  const used = statuses.map((s) => s.target ?? '').filter((t) => t !== '');
  const inSpec = new Set((vmi.spec.volumes ?? []).map((v) => v.name));
  const attach = (status: VolumeStatus): void => {
    status.target = nextTarget(vmi, status.name, used);
    used.push(status.target);
  };
  for (const status of statuses) {
    if (!status.hotplugVolume) {
      if (status.target === '' && inSpec.has(status.name) && hasDisk(vmi, status.name)) attach(status);
      continue;
    }
    if (!inSpec.has(status.name)) {
      if (['Ready', 'MountedToPod', 'AttachedToNode'].includes(status.phase ?? '')) {
        status.target = '';
        status.phase = 'UnMountedFromPod';
        status.reason = 'VolumeUnMountedFromPod';
        status.message = `Volume ${status.name} has been unmounted from virt-launcher pod`;
      }
      continue;
    }
    if (status.target !== '') {
      status.phase = 'Ready';
      status.reason = 'VolumeReady';
      status.message = `Successfully attach hotplugged volume ${status.name} to VM`;
      continue;
    }
    const mounted = (status.hotplugVolume.attachPodUID ?? '') !== '';
    if (status.phase === 'MountedToPod' && hasDisk(vmi, status.name)) {
      attach(status);
      status.phase = 'Ready';
      status.reason = 'VolumeReady';
      status.message = `Successfully attach hotplugged volume ${status.name} to VM`;
    } else if (mounted && ['Bound', 'Pending', 'AttachedToNode'].includes(status.phase ?? '')) {
      status.phase = 'MountedToPod';
      status.reason = 'VolumeMountedToPod';
      status.message = `Volume ${status.name} has been mounted in virt-launcher pod`;
    }
  }
  return statuses.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Interfaces as virt-handler reports them from the domain: name, MAC, no addresses. */
export function domainInterfaces(
  vmi: VirtualMachineInstance,
  macFor: (name: string) => string,
): VmiInterfaceStatus[] {
  return (vmi.spec.domain.devices?.interfaces ?? []).map((iface) => ({
    name: iface.name,
    mac: iface.macAddress ?? macFor(iface.name),
    infoSource: 'domain',
    queueCount: 1,
    linkState: 'up',
  }));
}

/**
 * What the guest agent adds once the guest is up: each interface's addresses as the guest
 * configured them (guest-addresses.ts: IPv4 first, then a global IPv6, then the link-local
 * one) and the guest's name for it. An interface still waiting for a DHCP lease is left as
 * it is, to be filled when the lease comes.
 */
export function withGuestAgentData(
  interfaces: VmiInterfaceStatus[],
  guest: readonly GuestAddresses[],
): VmiInterfaceStatus[] {
  return interfaces.map((iface, i) => {
    const g = guest[i];
    if (iface.ipAddress || !g || g.awaitingLease) return iface;
    const linkLocal = linkLocalFromMac(iface.mac ?? '');
    const addresses = [g.ipv4, g.ipv6, linkLocal].filter((a): a is string => Boolean(a));
    return {
      ...iface,
      ipAddress: addresses[0] ?? linkLocal,
      ipAddresses: addresses,
      interfaceName: g.interfaceName,
      infoSource: 'domain, guest-agent',
    };
  });
}

/** The IPv6 link-local address a Linux guest derives from its MAC (EUI-64). */
export function linkLocalFromMac(mac: string): string {
  const b = mac.split(':').map((h) => parseInt(h, 16));
  if (b.length !== 6 || b.some((v) => Number.isNaN(v))) return 'fe80::1';
  const bytes = [(b[0] ?? 0) ^ 0x02, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]] as number[];
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return `fe80::${groups.join(':')}`;
}

/** A locally administered MAC in QEMU's range, as libvirt picks one. */
export function randomMac(): string {
  const bytes = [0x52, 0x54, 0x00, ...Array.from({ length: 3 }, () => Math.floor(Math.random() * 256))];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}
