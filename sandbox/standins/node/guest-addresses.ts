// What the guest's network comes up with, as its qemu-guest-agent then reports it: a pure
// function of the VM's interfaces, its cloud-init network data and what a DHCP server on each
// interface's network would answer. cloud-init (v1 and v2 network config, the NoCloud
// datasource) configures exactly the interfaces its network data names, matched by MAC or by
// name; without network data it falls back to DHCP on the first interface. An interface
// nothing configures has only its IPv6 link-local address. A router on the network (the
// sandbox's default networks) also gives a SLAAC address, whatever configures IPv4.
//
// Pure: virt-handler's stand-in (virt-handler.ts) asks it once the guest agent reports, with
// the network data the launcher would hand the guest (networkDataSource) and what the sandbox's
// networks answer (network-servers.ts).
import { parseDocument } from 'yaml';
import type { VirtualMachineInstance } from '../types.js';

export interface GuestNic {
  /** The VMI's interface name (nic-0). */
  name: string;
  mac: string;
}

/** The servers on each NIC's network, by NIC index; undefined: none answers (yet). */
export interface NetworkServers {
  /** A DHCPv4 lease, asked only for the NICs that run DHCP. */
  lease: (index: number) => string | undefined;
  /** A SLAAC address from the network's router advertisements. */
  slaac: (index: number) => string | undefined;
}

export interface GuestAddresses {
  /** The name the guest gives the interface. */
  interfaceName: string;
  /** "10.0.0.5" (no prefix), as the guest agent reports it. */
  ipv4?: string;
  ipv6?: string;
  /** The NIC asked for DHCP and no lease came (yet): the caller may ask again later. */
  awaitingLease: boolean;
}

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => v !== null && typeof v === 'object' && !Array.isArray(v);
const lower = (v: unknown): string => (typeof v === 'string' ? v.toLowerCase() : '');

/** What one NIC is told: its guest name, static addresses, and whether it runs DHCP. */
interface NicConfig {
  name?: string;
  static4: string[];
  static6: string[];
  dhcp4: boolean;
}

const withoutPrefix = (address: string): string => address.split('/')[0] ?? address;
const isV6 = (address: string): boolean => address.includes(':');

function v1Configs(config: unknown[], nics: readonly GuestNic[]): Map<number, NicConfig> {
  const out = new Map<number, NicConfig>();
  for (const entry of config) {
    if (!isPlain(entry) || entry['type'] !== 'physical') continue;
    const byMac = nics.findIndex(
      (n) => n.mac.toLowerCase() === lower(entry['mac_address']) && entry['mac_address'] !== undefined,
    );
    const byName = nics.findIndex((_, i) => `eth${i}` === entry['name']);
    const index = byMac >= 0 ? byMac : byName;
    if (index < 0) continue;
    const nic: NicConfig = { static4: [], static6: [], dhcp4: false };
    if (typeof entry['name'] === 'string') nic.name = entry['name'];
    for (const subnet of Array.isArray(entry['subnets']) ? entry['subnets'] : []) {
      if (!isPlain(subnet)) continue;
      const type = subnet['type'];
      const address = typeof subnet['address'] === 'string' ? subnet['address'] : '';
      if (type === 'dhcp' || type === 'dhcp4') nic.dhcp4 = true;
      else if ((type === 'static' || type === 'static6') && address !== '')
        (isV6(address) ? nic.static6 : nic.static4).push(withoutPrefix(address));
    }
    out.set(index, nic);
  }
  return out;
}

function v2Configs(ethernets: Plain, nics: readonly GuestNic[]): Map<number, NicConfig> {
  const out = new Map<number, NicConfig>();
  for (const [id, entry] of Object.entries(ethernets)) {
    if (!isPlain(entry)) continue;
    const match = isPlain(entry['match']) ? entry['match'] : undefined;
    const index = match
      ? nics.findIndex(
          (n) => match['macaddress'] !== undefined && n.mac.toLowerCase() === lower(match['macaddress']),
        )
      : nics.findIndex((_, i) => `eth${i}` === id);
    if (index < 0) continue;
    const nic: NicConfig = { static4: [], static6: [], dhcp4: entry['dhcp4'] === true };
    if (typeof entry['set-name'] === 'string') nic.name = entry['set-name'];
    for (const address of Array.isArray(entry['addresses']) ? entry['addresses'] : [])
      if (typeof address === 'string')
        (isV6(address) ? nic.static6 : nic.static4).push(withoutPrefix(address));
    out.set(index, nic);
  }
  return out;
}

/** The NICs the network data configures; undefined when there is none (cloud-init's fallback then). */
function configured(
  networkData: string | undefined,
  nics: readonly GuestNic[],
): Map<number, NicConfig> | undefined {
  if (!networkData || networkData.trim() === '') return undefined;
  const doc = parseDocument(networkData, { version: '1.1' });
  if (doc.errors.length > 0) return undefined;
  const data: unknown = doc.toJS();
  if (!isPlain(data)) return undefined;
  const root = isPlain(data['network']) ? data['network'] : data;
  if (root['version'] === 1 && Array.isArray(root['config'])) return v1Configs(root['config'], nics);
  if (root['version'] === 2) return v2Configs(isPlain(root['ethernets']) ? root['ethernets'] : {}, nics);
  return undefined;
}

/** Each NIC's addresses once the guest is up, given what its network's servers answer. */
export function guestAddresses(
  nics: readonly GuestNic[],
  networkData: string | undefined,
  servers: NetworkServers,
): GuestAddresses[] {
  const fallback: NicConfig = { static4: [], static6: [], dhcp4: true };
  const configs = configured(networkData, nics) ?? new Map([[0, fallback]]);
  return nics.map((_, i) => {
    const config = configs.get(i);
    const leased = config?.dhcp4 && !config.static4[0] ? servers.lease(i) : undefined;
    const ipv4 = config?.static4[0] ?? leased;
    const ipv6 = config?.static6[0] ?? servers.slaac(i);
    return {
      interfaceName: config?.name ?? `eth${i}`,
      ...(ipv4 ? { ipv4 } : {}),
      ...(ipv6 ? { ipv6 } : {}),
      awaitingLease: Boolean(config?.dhcp4) && !config?.static4[0] && !leased,
    };
  });
}

/**
 * Where the guest's cloud-init network data comes from: inline (plain or base64) in its NoCloud
 * or ConfigDrive volume, or the Secret that volume names (read by the caller).
 */
export function networkDataSource(
  vmi: VirtualMachineInstance,
): { inline: string } | { secret: string } | undefined {
  for (const volume of vmi.spec.volumes ?? []) {
    const source = volume.cloudInitNoCloud ?? volume.cloudInitConfigDrive;
    if (!source) continue;
    if (source.networkData) return { inline: source.networkData };
    if (source.networkDataBase64)
      return { inline: Buffer.from(source.networkDataBase64, 'base64').toString('utf8') };
    if (source.networkDataSecretRef?.name) return { secret: source.networkDataSecretRef.name };
  }
  return undefined;
}

/** The network data a Secret holds: KubeVirt reads the key `networkdata`, then `networkData`. */
export function networkDataOfSecret(data: Record<string, string> | undefined): string | undefined {
  const encoded = data?.['networkdata'] ?? data?.['networkData'];
  return encoded ? Buffer.from(encoded, 'base64').toString('utf8') : undefined;
}
