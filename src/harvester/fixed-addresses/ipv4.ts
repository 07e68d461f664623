// IPv4 addresses as 32-bit numbers: what an address pool needs (parse strictly, count,
// walk a range, test a subnet). Strict on purpose: "010.0.0.1" means 8.0.0.1 to some
// parsers and 10.0.0.1 to others, so leading zeros are refused, as Go's net/netip does.

const OCTET = /^(?:0|[1-9]\d{0,2})$/;

/** The address as a number, or undefined unless it is exactly four decimal octets. */
export function parseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

export function formatIpv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

/** "10.0.0.0/24" → the network's first address and its prefix length; undefined if not a CIDR. */
export function parseCidr(text: string): { base: number; prefix: number } | undefined {
  const [address, prefixText, extra] = text.split('/');
  if (extra !== undefined || address === undefined || prefixText === undefined) return undefined;
  const ip = parseIpv4(address);
  if (ip === undefined || !/^(?:\d|[12]\d|3[0-2])$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  return { base: networkOf(ip, prefix), prefix };
}

const size = (prefix: number): number => 2 ** (32 - prefix);

export function networkOf(ip: number, prefix: number): number {
  return ip - (ip % size(prefix));
}

export function broadcastOf(ip: number, prefix: number): number {
  return networkOf(ip, prefix) + size(prefix) - 1;
}

export function inSubnet(ip: number, base: number, prefix: number): boolean {
  return networkOf(ip, prefix) === networkOf(base, prefix);
}

/** An inclusive range of addresses. */
export interface Ipv4Range {
  first: number;
  last: number;
}

/**
 * "10.0.0.5", "10.0.0.5-10.0.0.9" or "10.0.0.0/28" as a range (a CIDR: all its
 * addresses, network and broadcast included: callers decide which are usable).
 */
export function parseIpv4Range(text: string): Ipv4Range | undefined {
  const trimmed = text.trim();
  if (trimmed.includes('/')) {
    const cidr = parseCidr(trimmed);
    return cidr ? { first: cidr.base, last: cidr.base + size(cidr.prefix) - 1 } : undefined;
  }
  const [from, to, extra] = trimmed.split('-');
  if (extra !== undefined || from === undefined) return undefined;
  const first = parseIpv4(from.trim());
  const last = to === undefined ? first : parseIpv4(to.trim());
  if (first === undefined || last === undefined || last < first) return undefined;
  return { first, last };
}
