// vm-dhcp-controller's in-memory state (harvester/vm-dhcp-controller pkg/ipam/ipam.go,
// pkg/cache/cache.go at c3042d6): per network, every address of the pool's start..end
// (inclusive) with an allocated flag, the server, router and excluded addresses removed
// ("revoked"), and the MAC -> address cache. The controller rebuilds both from the IPPools'
// status when it starts; etcd (the IPPool status) is the truth.
//
// A free address is picked by walking a Go map, whose order Go randomises: which free
// address a MAC gets is not predictable upstream, so it is random here too.
import { formatIpv4, parseIpv4 } from '../../../src/harvester/fixed-addresses/ipv4.js';

export class NetworkIpam {
  private readonly ips = new Map<string, boolean>();
  private readonly macs = new Map<string, string>();

  /** NewIPSubnet: start..end, both inside the CIDR, end not the broadcast address. */
  constructor(
    readonly network: string,
    cidr: string,
    start: string,
    end: string,
  ) {
    const [base = '', bits = ''] = cidr.split('/');
    const prefix = Number(bits);
    const networkIp = parseIpv4(base);
    const first = parseIpv4(start);
    const last = parseIpv4(end);
    if (networkIp === undefined || !Number.isInteger(prefix) || first === undefined || last === undefined)
      throw new Error(`cannot load pool ${start}-${end} of ${cidr}`);
    const size = 2 ** (32 - prefix);
    const lo = networkIp - (networkIp % size);
    const broadcast = lo + size - 1;
    if (first < lo || first > broadcast)
      throw new Error(`start ip address ${start} is not within subnet ${cidr} range`);
    if (last < lo || last > broadcast)
      throw new Error(`end ip address ${end} is not within subnet ${cidr} range`);
    if (first > last) throw new Error(`end ip address ${end} is less than start ip address ${start}`);
    if (last === broadcast)
      throw new Error(`end ip address ${end} equals broadcast ip address ${formatIpv4(broadcast)}`);
    for (let ip = first; ip <= last; ip++) this.ips.set(formatIpv4(ip), false);
  }

  /** RevokeIP: the address is not the pool's to hand out. */
  revoke(ip: string): void {
    this.ips.delete(ip);
  }

  /** AllocateIP: the designated address if free, else (0.0.0.0 / none) any free one. */
  allocate(designated: string | undefined, random: () => number = Math.random): string {
    if (designated && designated !== '0.0.0.0') {
      const taken = this.ips.get(designated);
      // Upstream walks the map for it: one outside start..end is simply not found.
      if (taken === undefined) throw new Error(`no more ip addresses left in network ${this.network} ipam`);
      if (taken) throw new Error(`designated ip ${designated} is already allocated`);
      this.ips.set(designated, true);
      return designated;
    }
    const free = [...this.ips].filter(([, allocated]) => !allocated).map(([ip]) => ip);
    const ip = free[Math.floor(random() * free.length)];
    if (ip === undefined) throw new Error(`no more ip addresses left in network ${this.network} ipam`);
    this.ips.set(ip, true);
    return ip;
  }

  deallocate(ip: string): void {
    if (this.ips.get(ip)) this.ips.set(ip, false);
  }

  isAllocated(ip: string): boolean {
    return this.ips.get(ip) === true;
  }

  used(): number {
    return [...this.ips.values()].filter(Boolean).length;
  }

  available(): number {
    return [...this.ips.values()].filter((v) => !v).length;
  }

  ipOfMac(mac: string): string | undefined {
    return this.macs.get(mac);
  }

  addMac(mac: string, ip: string): void {
    this.macs.set(mac, ip);
  }

  deleteMac(mac: string): void {
    this.macs.delete(mac);
  }
}
