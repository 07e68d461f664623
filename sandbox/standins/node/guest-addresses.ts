// What the guest agent reports as an interface's addresses, as a pure function of the VMI and
// its cloud-init network data: the seam where a static address the network data configures
// would be taken (not read yet: every interface gets the sandbox's DHCP-like lease).
import type { VirtualMachineInstance } from '../types.js';

export interface Lease {
  ipv4: string;
  ipv6: string;
}

export interface GuestNetwork {
  vmi: VirtualMachineInstance;
  /** The cloud-init network data (inline or from its Secret), when the VMI has any. */
  networkData: string | undefined;
}

/** One entry per interface of the VMI's spec, in order. */
export function guestAddresses(guest: GuestNetwork, lease: (index: number) => Lease): Lease[] {
  const interfaces = guest.vmi.spec.domain.devices?.interfaces ?? [];
  return interfaces.map((_iface, index) => lease(index));
}

/** The network data a NoCloud or ConfigDrive volume carries inline, or the Secret holding it. */
export function networkDataSource(
  vmi: VirtualMachineInstance,
): { inline: string } | { secret: string } | undefined {
  for (const volume of vmi.spec.volumes ?? []) {
    const source = (volume.cloudInitNoCloud ?? volume.cloudInitConfigDrive) as
      | { networkData?: string; networkDataBase64?: string; networkDataSecretRef?: { name?: string } }
      | undefined;
    if (!source) continue;
    if (source.networkData) return { inline: source.networkData };
    if (source.networkDataBase64)
      return { inline: Buffer.from(source.networkDataBase64, 'base64').toString('utf8') };
    if (source.networkDataSecretRef?.name) return { secret: source.networkDataSecretRef.name };
  }
  return undefined;
}
