// --harvester-ip-pool-info: the addresses a machine pool's VMs take their fixed address
// from, one per machine (harvester/harvester#2099, #9810). Either the operator describes the
// pool (a range or a CIDR, exclusions, prefix, gateway, DNS) and the driver hands addresses
// out itself, or the network has an IPPool of
// Harvester's vm-dhcp-controller and that pool hands them out (then only `network` and
// `interface` are given). Pure: parsing, checks, the usable addresses, and names.
import { createHash } from 'node:crypto';
import { jsonProblem } from '../../common/parse-problems.js';
import { namespacedNameProblem } from '../disk-network-info.js';
import type { GoDriverConfig } from '../config/go-config.js';
import { interfaceNameForNetwork } from './ip-address.js';
import {
  broadcastOf,
  formatIpv4,
  inSubnet,
  networkOf,
  parseCidr,
  parseIpv4,
  parseIpv4Range,
} from './ipv4.js';
import { namespacedName, nicName } from '../names.js';
import { keyText } from '../../api/object-key.js';

/** The flag's value as saved (HarvesterMachine.IPPoolInfo); "" and [] when not given. */
export interface IpPoolInfo {
  /** The network (NetworkAttachmentDefinition) "namespace/name" or "name" the address is on. */
  network: string;
  /** Which of the VM's interfaces: "nic-<i>"; "" = the one on `network`. */
  interface: string;
  /** "first-last" (or one address): the addresses handed out. */
  range: string;
  /** The subnet "a.b.c.d/p": its prefix, and all its hosts when `range` is empty. */
  cidr: string;
  /** Addresses, "first-last" ranges or CIDRs never handed out. */
  exclude: string[];
  /** Prefix length of the address; 0 = the CIDR's. */
  prefix: number;
  gateway: string;
  dns: string[];
}

export const IP_POOL_INFO_EXAMPLE =
  '{"network":"default/vlan100","range":"192.168.100.10-192.168.100.19","prefix":24,"gateway":"192.168.100.1","dns":["192.168.100.1"]}';

/** At most a /16: a pool is walked address by address when one is picked. */
export const MAX_POOL_ADDRESSES = 65_536;
/** resolv.conf uses the first three nameservers (glibc's MAXNS); more would be silently unused. */
const MAX_DNS = 3;

const KEYS = ['network', 'interface', 'range', 'cidr', 'exclude', 'prefix', 'gateway', 'dns'] as const;

export function emptyIpPoolInfo(): IpPoolInfo {
  return { network: '', interface: '', range: '', cidr: '', exclude: [], prefix: 0, gateway: '', dns: [] };
}

/** The JSON (already base64-decoded) as an IpPoolInfo; problems are phrases after the flag name. */
export function parseIpPoolInfo(text: string): { value?: IpPoolInfo; problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { problems: [jsonProblem(err)] };
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return { problems: [`must be a JSON object like ${IP_POOL_INFO_EXAMPLE}`] };
  const obj = raw as Record<string, unknown>;
  const problems: string[] = [];
  const unknown = Object.keys(obj).filter((k) => !(KEYS as readonly string[]).includes(k));
  if (unknown.length > 0)
    problems.push(
      `has unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')} (known: ${KEYS.join(', ')})`,
    );
  const info = emptyIpPoolInfo();
  const text_ = (key: 'network' | 'interface' | 'range' | 'cidr' | 'gateway'): void => {
    const v = obj[key];
    if (v === undefined || v === null) return;
    if (typeof v === 'string') info[key] = v.trim();
    else problems.push(`"${key}" must be a string`);
  };
  const list = (key: 'exclude' | 'dns'): void => {
    const v = obj[key];
    if (v === undefined || v === null) return;
    if (Array.isArray(v) && v.every((e) => typeof e === 'string')) info[key] = v.map((e) => e.trim());
    else problems.push(`"${key}" must be a list of strings`);
  };
  text_('network');
  text_('interface');
  text_('range');
  text_('cidr');
  text_('gateway');
  list('exclude');
  list('dns');
  const prefix = obj['prefix'];
  if (prefix !== undefined && prefix !== null) {
    if (typeof prefix === 'number' && Number.isInteger(prefix)) info.prefix = prefix;
    else problems.push('"prefix" must be a whole number (the prefix length, e.g. 24)');
  }
  return problems.length > 0 ? { problems } : { value: info, problems };
}

/** Whether the pool describes its addresses (else a Harvester IP pool of the network must). */
export const describesAddresses = (info: IpPoolInfo): boolean => info.range !== '' || info.cidr !== '';

/** The subnet's prefix: the given one, else the CIDR's; undefined when neither says. */
export function poolPrefix(info: IpPoolInfo): number | undefined {
  if (info.prefix > 0) return info.prefix;
  return parseCidr(info.cidr)?.prefix;
}

/** The VM interface (nic-<i>) the pool configures, or undefined when none matches. */
export function poolInterface(
  info: IpPoolInfo,
  cfg: Pick<GoDriverConfig, 'NetworkInfo' | 'NetworkName' | 'VMNamespace'>,
): string | undefined {
  const onNetwork = interfaceNameForNetwork(cfg, info.network);
  if (info.interface === '') return onNetwork;
  const count = cfg.NetworkInfo ? cfg.NetworkInfo.interfaces.length : 1;
  const known = Array.from({ length: count }, (_, i) => nicName(i));
  return known.includes(info.interface) ? info.interface : undefined;
}

/** "default/vlan100": the network with its namespace. */
export function poolNetworkId(info: IpPoolInfo, vmNamespace: string): string {
  const { namespace, name } = namespacedName(info.network, vmNamespace);
  return keyText(namespace, name);
}

function addressListProblems(values: string[], key: string, problems: string[]): void {
  values.forEach((v, i) => {
    if (parseIpv4(v) === undefined) problems.push(`${key}[${i}] "${v}" is not an IPv4 address`);
  });
}

function networkProblems(
  info: IpPoolInfo,
  cfg: Pick<GoDriverConfig, 'NetworkInfo' | 'NetworkName' | 'VMNamespace'>,
  problems: string[],
): void {
  if (info.network === '') {
    problems.push(`needs "network", the network the address is on (e.g. ${IP_POOL_INFO_EXAMPLE})`);
    return;
  }
  const bad = namespacedNameProblem(info.network);
  if (bad) problems.push(`"network" ${bad}`);
  else if (!interfaceNameForNetwork(cfg, info.network))
    problems.push(
      `"network" ${info.network} is none of the machine's networks (--harvester-network-name or --harvester-network-info)`,
    );
  else if (info.interface !== '') {
    const nic = poolInterface(info, cfg);
    if (!nic)
      problems.push(`"interface" "${info.interface}" is none of the machine's interfaces (nic-0, nic-1, …)`);
    else if (!networkOfNic(cfg, nic, info.network))
      problems.push(`"interface" ${info.interface} is not on network ${info.network}`);
  }
}

/** The values one by one: each parses as what it must be. */
function valueProblems(info: IpPoolInfo, problems: string[]): void {
  const cidr = info.cidr !== '' ? parseCidr(info.cidr) : undefined;
  if (info.cidr !== '' && !cidr)
    problems.push(`"cidr" "${info.cidr}" is not an IPv4 CIDR like 192.168.100.0/24`);
  const range = info.range !== '' ? parseIpv4Range(info.range) : undefined;
  if (info.range !== '' && (!range || info.range.includes('/')))
    problems.push(`"range" "${info.range}" is not an address range like 192.168.100.10-192.168.100.19`);
  if (info.prefix !== 0 && (info.prefix < 1 || info.prefix > 32))
    problems.push(`"prefix" ${info.prefix} is not a prefix length (1 to 32)`);
  if (cidr && info.prefix !== 0 && info.prefix !== cidr.prefix)
    problems.push(`"prefix" ${info.prefix} differs from the CIDR's /${cidr.prefix}`);
  if (info.cidr === '' && info.prefix === 0)
    problems.push('needs "prefix" (the prefix length, e.g. 24) or "cidr" with "range"');
  if (
    cidr &&
    range &&
    !(inSubnet(range.first, cidr.base, cidr.prefix) && inSubnet(range.last, cidr.base, cidr.prefix))
  )
    problems.push(`"range" ${info.range} is not inside "cidr" ${info.cidr}`);
  if (info.gateway !== '' && parseIpv4(info.gateway) === undefined)
    problems.push(`"gateway" "${info.gateway}" is not an IPv4 address`);
  addressListProblems(info.dns, 'dns', problems);
  if (info.dns.length > MAX_DNS)
    problems.push(`"dns" lists ${info.dns.length} servers; a Linux resolver uses only the first ${MAX_DNS}`);
  info.exclude.forEach((v, i) => {
    if (!parseIpv4Range(v))
      problems.push(`exclude[${i}] "${v}" is not an address, a range first-last or a CIDR`);
  });
}

/** The values together: one subnet, the gateway in it, a size that can be walked, an address left. */
function subnetProblems(info: IpPoolInfo, problems: string[]): void {
  const cidr = parseCidr(info.cidr);
  const range = info.range !== '' ? parseIpv4Range(info.range) : undefined;
  const prefix = poolPrefix(info) ?? 32;
  const gateway = info.gateway !== '' ? parseIpv4(info.gateway) : undefined;
  const anyAddress = range?.first ?? cidr?.base ?? 0;
  if (gateway !== undefined && !inSubnet(gateway, anyAddress, prefix))
    problems.push(
      `"gateway" ${info.gateway} is outside the pool's subnet ${formatIpv4(networkOf(anyAddress, prefix))}/${prefix}`,
    );
  if (range && !inSubnet(range.last, range.first, prefix))
    problems.push(`"range" ${info.range} spans more than one /${prefix} subnet`);
  const span = range ? range.last - range.first + 1 : 2 ** (32 - prefix);
  if (span > MAX_POOL_ADDRESSES)
    problems.push(`describes ${span} addresses; a pool holds at most ${MAX_POOL_ADDRESSES} (a /16)`);
  else if (problems.length === 0 && poolAddresses(info).length === 0)
    problems.push(
      'leaves no address to hand out once the exclusions, the gateway and the DNS servers are taken out',
    );
}

/** Checks that need no Harvester: each a phrase after the flag name. */
export function ipPoolInfoProblems(
  info: IpPoolInfo,
  cfg: Pick<GoDriverConfig, 'NetworkInfo' | 'NetworkName' | 'VMNamespace'>,
): string[] {
  const problems: string[] = [];
  networkProblems(info, cfg, problems);
  if ([info.range, info.cidr, info.gateway, ...info.dns, ...info.exclude].some((v) => v.includes(':')))
    problems.push('takes IPv4 addresses only');
  if (!describesAddresses(info)) {
    const given = [
      info.exclude.length > 0 ? 'exclude' : '',
      info.prefix !== 0 ? 'prefix' : '',
      info.gateway !== '' ? 'gateway' : '',
      info.dns.length > 0 ? 'dns' : '',
    ].filter(Boolean);
    if (given.length > 0)
      problems.push(
        `gives ${given.join(', ')} without "range" or "cidr": without them the network's Harvester IP pool (vm-dhcp-controller) hands out the address and sets those itself`,
      );
    return problems;
  }
  const before = problems.length;
  valueProblems(info, problems);
  if (problems.length === before) subnetProblems(info, problems);
  return problems;
}

function networkOfNic(
  cfg: Pick<GoDriverConfig, 'NetworkInfo' | 'NetworkName' | 'VMNamespace'>,
  nic: string,
  network: string,
): boolean {
  const index = Number(nic.slice('nic-'.length));
  const name = cfg.NetworkInfo ? cfg.NetworkInfo.interfaces[index]?.networkName : cfg.NetworkName;
  if (!name) return false;
  const key = (v: string): string => {
    const n = namespacedName(v, cfg.VMNamespace);
    return keyText(n.namespace, n.name);
  };
  return key(name) === key(network);
}

/**
 * The addresses the driver may hand out, in order: the range (else the CIDR's hosts), less
 * the network and broadcast addresses (prefix ≤ 30), the gateway, the DNS servers and the
 * exclusions. Empty for a pool that describes none (a Harvester IP pool's).
 */
export function poolAddresses(info: IpPoolInfo): string[] {
  if (!describesAddresses(info)) return [];
  const cidr = parseCidr(info.cidr);
  const range = info.range !== '' ? parseIpv4Range(info.range) : undefined;
  const prefix = poolPrefix(info);
  const first = range?.first ?? cidr?.base;
  if (first === undefined || prefix === undefined) return [];
  const last = range?.last ?? broadcastOf(first, prefix);
  if (last - first + 1 > MAX_POOL_ADDRESSES) return [];
  const taken = new Set<number>();
  if (prefix <= 30) {
    taken.add(networkOf(first, prefix));
    taken.add(broadcastOf(first, prefix));
  }
  for (const single of [info.gateway, ...info.dns]) {
    const ip = parseIpv4(single);
    if (ip !== undefined) taken.add(ip);
  }
  const excluded = info.exclude.flatMap((e) => {
    const r = parseIpv4Range(e);
    return r ? [r] : [];
  });
  const out: string[] = [];
  for (let ip = first; ip <= last; ip++) {
    if (taken.has(ip) || excluded.some((r) => ip >= r.first && ip <= r.last)) continue;
    out.push(formatIpv4(ip));
  }
  return out;
}

/**
 * Why `address` is not one the pool hands out (a phrase after the address), or undefined when
 * it is: exactly poolAddresses' rule (the range, else the CIDR's hosts; not the network or
 * broadcast address, the gateway, a DNS server or an exclusion), without walking the pool.
 */
export function poolAddressProblem(info: IpPoolInfo, address: string): string | undefined {
  const ip = parseIpv4(address);
  if (ip === undefined) return 'is not an IPv4 address (four decimal octets, no leading zeros)';
  const cidr = parseCidr(info.cidr);
  const range = info.range !== '' ? parseIpv4Range(info.range) : undefined;
  const prefix = poolPrefix(info);
  const first = range?.first ?? cidr?.base;
  if (!describesAddresses(info) || first === undefined || prefix === undefined)
    return 'is not from a pool the driver hands out (the pool describes no addresses)';
  const subnet = `${formatIpv4(networkOf(first, prefix))}/${prefix}`;
  if (!inSubnet(ip, first, prefix)) return `is outside the pool's subnet ${subnet}`;
  const last = range?.last ?? broadcastOf(first, prefix);
  if (ip < first || ip > last) return `is outside the pool's range ${formatIpv4(first)}-${formatIpv4(last)}`;
  if (prefix <= 30 && ip === networkOf(first, prefix)) return `is the network address of ${subnet}`;
  if (prefix <= 30 && ip === broadcastOf(first, prefix)) return `is the broadcast address of ${subnet}`;
  if (ip === parseIpv4(info.gateway)) return "is the pool's gateway";
  if (info.dns.some((d) => parseIpv4(d) === ip)) return "is one of the pool's DNS servers";
  const excluded = info.exclude.findIndex((e) => {
    const r = parseIpv4Range(e);
    return r !== undefined && ip >= r.first && ip <= r.last;
  });
  if (excluded >= 0) return `is excluded by the pool's exclude[${excluded}] "${info.exclude[excluded]}"`;
  return undefined;
}

/** "default/vlan100 192.168.100.10-192.168.100.19": the pool as messages name it. */
export function describePool(info: IpPoolInfo, vmNamespace: string): string {
  const what = info.range !== '' ? info.range : info.cidr;
  return `${poolNetworkId(info, vmNamespace)}${what ? ` ${what}` : ''}`;
}

/** A short stable hash of a network, for object names and label values. */
export function networkKey(networkId: string): string {
  return createHash('sha256').update(networkId).digest('hex').slice(0, 10);
}

/**
 * The name of the object that holds one address of one network: `hm-ip-<network
 * key>-<a>-<b>-<c>-<d>`. One name per address is what makes a create-if-absent the lock.
 */
export function claimName(networkId: string, address: string): string {
  return `hm-ip-${networkKey(networkId)}-${address.replaceAll('.', '-')}`;
}
