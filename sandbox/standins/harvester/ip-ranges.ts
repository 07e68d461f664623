// The IPv4 addresses an IP pool hands out (load-balancer-harvester pkg/ipam/allocator.go,
// after containernetworking's host-local ranges): rangeStart..rangeEnd inside the subnet,
// by default every address but the network, broadcast and gateway addresses. IPv6 ranges
// are not played.
const MAX_ADDRESSES = 4096;

const toInt = (ip: string): number => {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255))
    throw new Error(`"${ip}" is not an IPv4 address`);
  return (
    ((parts[0] as number) * 2 ** 24 +
      (parts[1] as number) * 2 ** 16 +
      (parts[2] as number) * 256 +
      (parts[3] as number)) >>>
    0
  );
};
const toIp = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

export interface PoolAddresses {
  addresses: string[];
  /** The subnet's mask, dotted ("255.255.255.0"). */
  mask: string;
  gateway: string;
}

export function ipPoolAddresses(
  ranges: ReadonlyArray<{ subnet: string; rangeStart?: string; rangeEnd?: string; gateway?: string }>,
): PoolAddresses {
  const addresses: string[] = [];
  let mask = '';
  let gateway = '';
  for (const r of ranges) {
    const [base = '', bitsText = ''] = r.subnet.split('/');
    const bits = Number(bitsText);
    if (!Number.isInteger(bits) || bits < 8 || bits > 32)
      throw new Error(`subnet "${r.subnet}" is not an IPv4 CIDR`);
    const size = 2 ** (32 - bits);
    const network = toInt(base) - (toInt(base) % size);
    const broadcast = network + size - 1;
    mask ||= toIp((2 ** 32 - size) >>> 0);
    gateway ||= r.gateway ?? '';
    const first = r.rangeStart ? toInt(r.rangeStart) : size > 2 ? network + 1 : network;
    const last = r.rangeEnd ? toInt(r.rangeEnd) : size > 2 ? broadcast - 1 : broadcast;
    const skip = r.gateway ? toInt(r.gateway) : undefined;
    for (
      let n = Math.max(first, network);
      n <= Math.min(last, broadcast) && addresses.length < MAX_ADDRESSES;
      n++
    )
      if (n !== skip) addresses.push(toIp(n));
  }
  return { addresses, mask, gateway };
}
