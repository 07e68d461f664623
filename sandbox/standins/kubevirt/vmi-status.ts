// Pure pieces of the VMI status virt-controller and virt-handler write (v1.7.0):
// phase transitions, volume statuses (with hot-plug phases) and network interfaces.
import { nowIso } from '../runtime.js';
import type {
  PersistentVolumeClaim,
  Pod,
  VirtualMachineInstance,
  VmiInterfaceStatus,
  VmiPhase,
  VmiStatus,
  VolumeStatus,
} from '../types.js';
import type { GuestAddresses } from './guest-network.js';
import { claimNameOf, isHotplugVolume } from './vmi-template.js';

/** virt-controller's default when CDI is not installed (storagetypes.DefaultFSOverhead). */
const DEFAULT_FS_OVERHEAD = '0.055';

export function withPhase(status: VmiStatus | undefined, phase: VmiPhase): VmiStatus {
  const next = { ...status, phase };
  if (status?.phase !== phase) {
    next.phaseTransitionTimestamps = [
      ...(status?.phaseTransitionTimestamps ?? []),
      { phase, phaseTransitionTimestamp: nowIso() },
    ];
  }
  return next;
}

export function pvcInfo(pvc: PersistentVolumeClaim): Record<string, unknown> {
  return {
    claimName: pvc.metadata.name,
    accessModes: pvc.spec.accessModes ?? [],
    ...(pvc.spec.volumeMode ? { volumeMode: pvc.spec.volumeMode } : {}),
    ...(pvc.status?.capacity ? { capacity: pvc.status.capacity } : {}),
    ...(pvc.spec.resources?.requests ? { requests: pvc.spec.resources.requests } : {}),
    filesystemOverhead: DEFAULT_FS_OVERHEAD,
  };
}

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

const prefixOf = (target: string): string => target.slice(0, 2);

/** The next free target on this disk's bus, given the targets already in use. */
export function nextTarget(vmi: VirtualMachineInstance, name: string, used: string[]): string {
  const bus = busOf(vmi, name);
  const prefix = targetName(bus, 0).slice(0, 2);
  const taken = new Set(used.filter((t) => prefixOf(t) === prefix));
  for (let i = 0; ; i++) if (!taken.has(targetName(bus, i))) return targetName(bus, i);
}

export interface VolumeWorld {
  pvc: (claimName: string) => PersistentVolumeClaim | undefined;
  /** The hot-plug attachment pod serving this volume, if any. */
  attachPod: (volumeName: string) => Pod | undefined;
  /** virt-handler has started the domain: disks have targets. */
  domainRunning: boolean;
}

/** virt-controller's updateVolumeStatus plus virt-handler's hot-plug phases, sorted by name. */
export function volumeStatuses(vmi: VirtualMachineInstance, world: VolumeWorld): VolumeStatus[] {
  const old = new Map((vmi.status?.volumeStatus ?? []).map((s) => [s.name, s]));
  const used = [...old.values()].map((s) => s.target ?? '').filter((t) => t !== '');
  const next: VolumeStatus[] = [];
  for (const volume of vmi.spec.volumes ?? []) {
    const prior = old.get(volume.name);
    old.delete(volume.name);
    let status: VolumeStatus = prior ? { ...prior } : { name: volume.name, target: '' };
    const claim = claimNameOf(volume);
    const pvc = claim !== undefined ? world.pvc(claim) : undefined;
    if (pvc) status.persistentVolumeClaimInfo = pvcInfo(pvc);
    if (isHotplugVolume(volume)) {
      status = hotplugStatus(status, claim ?? volume.name, pvc, world.attachPod(volume.name));
      if (status.phase === 'Ready' && status.target === '') {
        status.target = nextTarget(vmi, volume.name, used);
        used.push(status.target);
      }
    } else if (world.domainRunning && status.target === '') {
      status.target = nextTarget(vmi, volume.name, used);
      used.push(status.target);
    }
    next.push(status);
  }
  // A volume gone from the spec keeps its status while its attachment pod is still there.
  for (const [name, status] of old) {
    const pod = world.attachPod(name);
    if (!pod || !status.hotplugVolume) continue;
    next.push({
      ...status,
      phase: status.phase === 'Ready' || status.phase === 'MountedToPod' ? status.phase : 'Detaching',
      ...(pod.metadata.deletionTimestamp
        ? {
            reason: 'SuccessfulDelete',
            message: `Deleted hotplug attachment pod ${pod.metadata.name}, for volume ${name}`,
          }
        : {}),
    });
  }
  return next.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function hotplugStatus(
  status: VolumeStatus,
  claim: string,
  pvc: PersistentVolumeClaim | undefined,
  pod: Pod | undefined,
): VolumeStatus {
  const next: VolumeStatus = { ...status, hotplugVolume: { ...status.hotplugVolume } };
  if (!pod) {
    if (status.phase === 'Ready') return next;
    delete next.hotplugVolume?.attachPodUID;
    const [phase, reason, message] = !pvc
      ? ['Pending', 'FailedPvcNotFound', `PVC ${claim} not found`]
      : pvc.status?.phase === 'Bound'
        ? ['Bound', 'PVCNotReady', 'PVC is in phase Bound']
        : ['Pending', 'PVCNotReady', 'PVC is in phase ClaimPending'];
    return { ...next, phase, reason, message };
  }
  const podName = pod.metadata.name;
  const ready =
    pod.status?.containerStatuses?.length === 1 && pod.status.containerStatuses[0]?.ready === true;
  next.hotplugVolume = { attachPodName: podName, ...(ready ? { attachPodUID: pod.metadata.uid ?? '' } : {}) };
  if (ready) {
    return {
      ...next,
      phase: 'Ready',
      reason: 'VolumeReady',
      message: `Successfully attach hotplugged volume ${status.name} to VM`,
    };
  }
  if (['', undefined, 'Pending', 'Bound'].includes(status.phase)) {
    return {
      ...next,
      phase: 'AttachedToNode',
      reason: 'SuccessfulCreate',
      message: `Created hotplug attachment pod ${podName}, for volume ${status.name}`,
    };
  }
  return next;
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
 * configured them (guest-network.ts: IPv4 first, then a global IPv6, then the link-local
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
