// What the vm-dhcp-controller stand-in's three controllers share: the caches, the IPAM and
// MAC cache per network, and the writes to a pool's status.
import { VmDhcpResources } from '../../../src/harvester-access/harvester-api.js';
import { ipPoolOfNetwork } from '../../../src/harvester/fixed-addresses/vm-dhcp.js';
import type { Cache } from '../../../src/kube/manager.js';
import { Resources, type KubeObject } from '../../../src/kube/resources.js';
import { parseKey } from '../../../src/api/object-key.js';
import type { StandInContext } from '../context.js';
import { nowIso, sameJson } from '../runtime.js';
import type { VirtualMachine } from '../types.js';
import { refOf, updateWithRetry } from '../writes.js';
import {
  bookedPoolStatus,
  type NetCfg,
  type NetCfgStatus,
  type Pool,
  type PoolStatus,
} from './vm-dhcp-decisions.js';
import type { NetworkIpam } from './vm-dhcp-ipam.js';

export interface VmDhcpShared {
  pools: Cache<Pool>;
  cfgs: Cache<NetCfg>;
  nads: Cache<KubeObject>;
  vms: Cache<VirtualMachine>;
  /** Per network ("namespace/name" as the pool names it): the IPAM and MAC cache. */
  ipam: Map<string, NetworkIpam>;
  poolOfNetwork: (network: string) => Pool | undefined;
  writePoolStatus: (pool: Pool, change: (s: PoolStatus) => PoolStatus) => Promise<void>;
  /** Frees the addresses of these statuses, in the IPAM and in their pools' status. */
  release: (statuses: NonNullable<NetCfgStatus['networkConfigs']>) => Promise<void>;
  /** Books (or frees) an address in its pool's status.ipv4.allocated. */
  book: (network: string, ip: string, mac: string | undefined) => Promise<void>;
}

export function vmDhcpShared(ctx: StandInContext): VmDhcpShared {
  const { client } = ctx;
  const pools = ctx.manager.cache<Pool>({ type: VmDhcpResources.ipPool });
  const cfgs = ctx.manager.cache<NetCfg>({ type: VmDhcpResources.networkConfig });
  const nads = ctx.manager.cache<KubeObject>({ type: Resources.networkAttachmentDefinition });
  const vms = ctx.manager.cache<VirtualMachine>({ type: Resources.virtualMachine });
  const ipam = new Map<string, NetworkIpam>();

  const poolOfNetwork = (network: string): Pool | undefined => {
    const ref = ipPoolOfNetwork(nads.get(parseKey(network))?.metadata.labels);
    return ref ? pools.get(ref) : undefined;
  };

  async function writePoolStatus(pool: Pool, change: (s: PoolStatus) => PoolStatus): Promise<void> {
    await updateWithRetry(
      client,
      VmDhcpResources.ipPool,
      pool,
      refOf(pool),
      (p) => {
        const next = change({ ...p.status });
        if (sameJson(next, p.status ?? {})) return undefined;
        return { ...p, status: { ...next, lastUpdate: nowIso() } };
      },
      'status',
    );
  }

  async function book(network: string, ip: string, mac: string | undefined): Promise<void> {
    const pool = poolOfNetwork(network);
    if (!pool) return;
    await writePoolStatus(pool, (s) => bookedPoolStatus(s, ip, mac, ipam.get(network)));
  }

  async function release(statuses: NonNullable<NetCfgStatus['networkConfigs']>): Promise<void> {
    for (const s of statuses) {
      const net = ipam.get(s.networkName ?? '');
      if (!net || !s.allocatedIPAddress) continue;
      if (net.isAllocated(s.allocatedIPAddress)) net.deallocate(s.allocatedIPAddress);
      net.deleteMac(s.macAddress ?? '');
      await book(s.networkName ?? '', s.allocatedIPAddress, undefined);
    }
  }

  return { pools, cfgs, nads, vms, ipam, poolOfNetwork, writePoolStatus, book, release };
}
