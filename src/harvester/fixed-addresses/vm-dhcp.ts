import { keyTextOf } from '../../api/object-key.js';
// Harvester's managed DHCP (the vm-dhcp-controller add-on, network.harvesterhci.io/v1alpha1)
// as the driver sees it: which IPPool serves a network (the pool's controller labels the
// network), what a VM's VirtualMachineNetworkConfig says its MAC got, and how full a pool
// is. The add-on binds each MAC it sees on a VM to one address of the pool, and its DHCP
// agent serves exactly those bindings (docs/upstream/vm-dhcp-controller.md).

/** On a NetworkAttachmentDefinition: the IPPool serving it (set by the IPPool controller). */
export const LABEL_IPPOOL_NAMESPACE = 'network.harvesterhci.io/ippool-namespace';
export const LABEL_IPPOOL_NAME = 'network.harvesterhci.io/ippool-name';
/** IPPool status.ipv4.allocated values that are not MACs. */
export const EXCLUDED_MARK = 'EXCLUDED';
export const RESERVED_MARK = 'RESERVED';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
}

export interface VmDhcpIpPool {
  metadata: { name?: string; namespace?: string };
  spec?: {
    networkName?: string;
    paused?: boolean;
    ipv4Config?: {
      cidr?: string;
      serverIP?: string;
      router?: string;
      dns?: string[];
      pool?: { start?: string; end?: string; exclude?: string[] };
    };
  };
  status?: {
    ipv4?: { allocated?: Record<string, string>; used?: number; available?: number };
    conditions?: Condition[];
  };
}

export interface VmNetworkConfig {
  metadata: { name?: string; namespace?: string };
  spec?: {
    vmName?: string;
    networkConfigs?: Array<{ networkName?: string; macAddress?: string; ipAddress?: string }>;
  };
  status?: {
    networkConfigs?: Array<{
      allocatedIPAddress?: string;
      macAddress?: string;
      networkName?: string;
      state?: string;
    }>;
    conditions?: Condition[];
  };
}

/** The IPPool serving a network, from the network's labels; undefined when none does. */
export function ipPoolOfNetwork(
  labels: Record<string, string> | undefined,
): { namespace: string; name: string } | undefined {
  const namespace = labels?.[LABEL_IPPOOL_NAMESPACE];
  const name = labels?.[LABEL_IPPOOL_NAME];
  return namespace && name ? { namespace, name } : undefined;
}

const sameMac = (a: string | undefined, b: string): boolean => (a ?? '').toLowerCase() === b.toLowerCase();

/**
 * What the add-on made of a MAC: its address, a refusal that will not pass by waiting (the
 * pool is full, the address is taken), or undefined while it is still working on it.
 */
export function allocationOf(
  cfg: VmNetworkConfig | undefined,
  mac: string,
): { address: string } | { refused: string } | { waiting: string } | undefined {
  if (!cfg) return undefined;
  const status = cfg.status?.networkConfigs?.find((n) => sameMac(n.macAddress, mac));
  if (status?.allocatedIPAddress && status.state === 'Allocated')
    return { address: status.allocatedIPAddress };
  const allocated = cfg.status?.conditions?.find((c) => c.type === 'Allocated');
  if (allocated?.status === 'False' && allocated.message) {
    // The add-on's IPAM answers so when the pool has no address left or the one asked for is taken.
    if (/no more ip addresses left|is already allocated/.test(allocated.message))
      return { refused: allocated.message };
    return { waiting: allocated.message };
  }
  return undefined;
}

/** A pool's addresses as its status books them: held by MACs, and the number still free. */
export function ipPoolUsage(pool: VmDhcpIpPool): {
  held: Array<{ address: string; mac: string }>;
  available: number | undefined;
} {
  const allocated = pool.status?.ipv4?.allocated ?? {};
  const held = Object.entries(allocated)
    .filter(([, mac]) => mac !== EXCLUDED_MARK && mac !== RESERVED_MARK)
    .map(([address, mac]) => ({ address, mac }))
    .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  return { held, available: pool.status?.ipv4?.available };
}

/** "default/net-48 (192.168.48.81-192.168.48.90 of 192.168.48.0/24)". */
export function describeIpPool(pool: VmDhcpIpPool): string {
  const v4 = pool.spec?.ipv4Config;
  const range = v4?.pool?.start && v4.pool.end ? `${v4.pool.start}-${v4.pool.end}` : '';
  const where = [range, v4?.cidr].filter(Boolean).join(' of ');
  return `${keyTextOf(pool)}${where ? ` (${where})` : ''}`;
}

/** The prefix length of the pool's CIDR (for the address the machine reports). */
export function ipPoolPrefix(pool: VmDhcpIpPool): number {
  const prefix = Number((pool.spec?.ipv4Config?.cidr ?? '').split('/')[1]);
  return Number.isInteger(prefix) && prefix > 0 ? prefix : 32;
}
