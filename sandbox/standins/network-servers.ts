// The sandbox's networks, as the guests on them see them (the network side Harvester leaves
// to the data centre): the pod network and the VLAN networks have a DHCP server and a router
// (IPv4 leases and SLAAC addresses from one sandbox-wide pool), except those named in
// `networksWithoutDhcp` (a VLAN with no DHCP at all, harvester#9810), and a network an IPPool
// of vm-dhcp-controller serves, whose DHCP agent answers each MAC with the address the pool's
// status binds to it (and nothing else).
import { keyText, parseKey } from '../../src/api/object-key.js';
import { ipPoolOfNetwork, type VmDhcpIpPool } from '../../src/harvester/fixed-addresses/vm-dhcp.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import type { StandInContext } from './context.js';
import { VmDhcpTypes } from './harvester/vm-dhcp-controller.js';
import type { NetworkServers } from './node/guest-addresses.js';
import type { VirtualMachineInstance } from './types.js';

/** Every interface gets addresses no other has: one counter for the whole sandbox. */
class ExternalLeases {
  private next = 10;
  private readonly given = new Map<string, { ipv4: string; ipv6: string }>();

  /** One lease (and SLAAC address) per VMI and interface, for as long as the VMI lives. */
  of(id: string): { ipv4: string; ipv6: string } {
    let lease = this.given.get(id);
    if (!lease) {
      const n = this.next++;
      lease = {
        ipv4: `172.20.${Math.floor(n / 250) % 256}.${(n % 250) + 2}`,
        ipv6: `fd20:172:20::${n.toString(16)}`,
      };
      this.given.set(id, lease);
    }
    return lease;
  }

  forget(vmiUid: string): void {
    for (const id of this.given.keys()) if (id.startsWith(`${vmiUid}/`)) this.given.delete(id);
  }
}

export interface SandboxNetworks {
  /** The servers each of the VMI's interfaces (in spec order) reaches. */
  serversOf(vmi: VirtualMachineInstance): NetworkServers;
  /** The VMI is gone: its leases end. */
  forget(vmiUid: string): void;
}

export function sandboxNetworks(ctx: StandInContext): SandboxNetworks {
  const nads = ctx.manager.cache<KubeObject>({ type: Resources.networkAttachmentDefinition });
  const pools = ctx.manager.cache<VmDhcpIpPool & KubeObject>({ type: VmDhcpTypes.ipPool });
  const external = new ExternalLeases();

  /** "namespace/name" of the interface's Multus network, or undefined on the pod network. */
  const networkOf = (vmi: VirtualMachineInstance, nic: string): string | undefined => {
    const network = (vmi.spec.networks ?? []).find((n) => n.name === nic) as
      { multus?: { networkName?: string } } | undefined;
    const name = network?.multus?.networkName;
    if (!name) return undefined;
    return name.includes('/') ? name : keyText(vmi.metadata.namespace, name);
  };

  return {
    serversOf(vmi) {
      const nics = vmi.spec.domain.devices?.interfaces ?? [];
      const kindOf = (
        i: number,
      ): { kind: 'external' } | { kind: 'none' } | { kind: 'pool'; pool?: VmDhcpIpPool } => {
        const network = networkOf(vmi, nics[i]?.name ?? '');
        if (network === undefined) return { kind: 'external' };
        const ref = ipPoolOfNetwork(nads.get(parseKey(network))?.metadata.labels);
        if (ref) {
          const pool = pools.get(ref);
          return { kind: 'pool', ...(pool ? { pool } : {}) };
        }
        return ctx.behaviour.networksWithoutDhcp.includes(network) ? { kind: 'none' } : { kind: 'external' };
      };
      const id = (i: number): string => `${vmi.metadata.uid ?? ''}/${nics[i]?.name ?? i}`;
      return {
        lease: (i) => {
          const kind = kindOf(i);
          if (kind.kind === 'external') return external.of(id(i)).ipv4;
          if (kind.kind === 'none') return undefined;
          const mac =
            (vmi.status?.interfaces ?? []).find((s) => s.name === nics[i]?.name)?.mac ??
            nics[i]?.macAddress ??
            '';
          const allocated = kind.pool?.status?.ipv4?.allocated ?? {};
          return Object.entries(allocated).find(([, m]) => m.toLowerCase() === mac.toLowerCase())?.[0];
        },
        slaac: (i) => (kindOf(i).kind === 'external' ? external.of(id(i)).ipv6 : undefined),
      };
    },
    forget: (uid) => external.forget(uid),
  };
}
