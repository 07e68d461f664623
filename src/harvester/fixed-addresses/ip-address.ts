// The node's IP addresses from the VMI's status.interfaces (filled by qemu-guest-agent,
// so it can be empty for minutes). The Go driver takes interfaces[0].ipAddress, requires
// IPv4 and panics on an empty list; here: the chosen network's interface, both families,
// link-local and loopback skipped, and "nothing yet" is an answer rather than a crash.

import { isIPv4, isIPv6 } from 'node:net';
import type { GoDriverConfig } from '../config/go-config.js';
import { namespacedName, nicName } from '../names.js';
import type { VMINetworkInterfaceStatus, VirtualMachineInstance } from '../types.js';
import { keyText } from '../../api/object-key.js';

export interface NodeAddresses {
  /** First usable IPv4 address of the chosen interface. */
  ipv4?: string;
  /** First usable (global or unique-local) IPv6 address of the chosen interface. */
  ipv6?: string;
  /** Every usable address of the chosen interface, in the order reported, without prefix length. */
  addresses: string[];
  /** VMI status name of the chosen interface (nic-<i>), when it has one. */
  interfaceName?: string;
}

/** "10.0.0.5/24" → "10.0.0.5"; undefined for anything that is not a usable unicast address. */
function usableAddress(raw: string): string | undefined {
  const address = (raw.split('/')[0] ?? '').trim();
  if (isIPv4(address)) {
    return address.startsWith('127.') || address.startsWith('169.254.') ? undefined : address;
  }
  if (isIPv6(address)) {
    const lower = address.toLowerCase();
    if (lower === '::1' || /^fe[89ab]/.test(lower)) return undefined;
    return address;
  }
  return undefined;
}

function addressesOf(iface: VMINetworkInterfaceStatus): string[] {
  const out: string[] = [];
  for (const raw of [iface.ipAddress ?? '', ...(iface.ipAddresses ?? [])]) {
    const address = usableAddress(raw);
    if (address && !out.includes(address)) out.push(address);
  }
  return out;
}

/**
 * Which VMI interface carries the network named by --harvester-ip-network: the value
 * may be an interface name (`nic-1`) or a network ("vlan1" or "default/vlan1", the
 * namespace defaulting to the VM's). Undefined when no configured interface matches.
 */
export function interfaceNameForNetwork(
  cfg: Pick<GoDriverConfig, 'NetworkInfo' | 'NetworkName' | 'VMNamespace'>,
  ipNetwork: string,
): string | undefined {
  const networks = cfg.NetworkInfo ? cfg.NetworkInfo.interfaces.map((i) => i.networkName) : [cfg.NetworkName];
  if (networks.some((_n, i) => nicName(i) === ipNetwork)) return ipNetwork;
  const key = (value: string): string => {
    const { namespace, name } = namespacedName(value, cfg.VMNamespace);
    return keyText(namespace, name);
  };
  const wanted = key(ipNetwork);
  const index = networks.findIndex((n) => n !== '' && key(n) === wanted);
  return index >= 0 ? nicName(index) : undefined;
}

/**
 * The node's addresses. With `interfaceName`, only that interface counts (no fallback:
 * the operator chose it). Without, the first interface with a usable address, preferring
 * the VM's own NICs over interfaces only the guest agent reports (cni0, docker0, …).
 * Undefined when nothing usable is reported yet; never throws.
 */
export function pickNodeAddresses(
  vmi: VirtualMachineInstance | undefined,
  interfaceName?: string,
): NodeAddresses | undefined {
  const interfaces = vmi?.status?.interfaces ?? [];
  const candidates =
    interfaceName !== undefined
      ? interfaces.filter((i) => i.name === interfaceName)
      : [...interfaces.filter((i) => i.name), ...interfaces.filter((i) => !i.name)];
  for (const iface of candidates) {
    const addresses = addressesOf(iface);
    if (addresses.length === 0) continue;
    const result: NodeAddresses = { addresses };
    const ipv4 = addresses.find((a) => isIPv4(a));
    const ipv6 = addresses.find((a) => isIPv6(a));
    if (ipv4) result.ipv4 = ipv4;
    if (ipv6) result.ipv6 = ipv6;
    if (iface.name) result.interfaceName = iface.name;
    return result;
  }
  return undefined;
}
