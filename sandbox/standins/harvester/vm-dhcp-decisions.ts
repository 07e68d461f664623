// The vm-dhcp-controller stand-in's pure decisions (vm-dhcp-controller.ts has the sources):
// conditions as wrangler sets them, a pool's IPAM rebuilt from its status, the pool's status
// after a reconcile, the MACs of a VM on Multus networks, its VirtualMachineNetworkConfig.
import type { KubeObject } from '../../../src/kube/resources.js';
import {
  EXCLUDED_MARK,
  RESERVED_MARK,
  type Condition,
  type VmDhcpIpPool,
  type VmNetworkConfig,
} from '../../../src/harvester/fixed-addresses/vm-dhcp.js';
import { Annotations } from '../names.js';
import { nowIso } from '../runtime.js';
import type { VirtualMachine } from '../types.js';
import { NetworkIpam } from './vm-dhcp-ipam.js';

export type Pool = VmDhcpIpPool & KubeObject & { spec: NonNullable<VmDhcpIpPool['spec']> };
export type PoolStatus = NonNullable<Pool['status']>;
export type NetCfg = VmNetworkConfig & KubeObject;
export type NetCfgStatus = NonNullable<NetCfg['status']>;
export type NetworkConfigEntry = { networkName: string; macAddress: string };
export const VM_LABEL = 'harvesterhci.io/vmName';

/** wrangler's condition.SetError: True (message cleared) without an error, else False, reason Error. */
export function setCondition(
  conditions: Condition[] | undefined,
  type: string,
  err: unknown,
  now: () => string = nowIso,
): Condition[] {
  const rest = (conditions ?? []).filter((c) => c.type !== type);
  const old = (conditions ?? []).find((c) => c.type === type);
  const next: Condition & { lastUpdateTime?: string } = err
    ? { type, status: 'False', reason: 'Error', message: (err as Error).message }
    : { type, status: 'True', reason: old?.status === 'True' ? (old.reason ?? '') : '', message: '' };
  if (old && old.status === next.status && old.message === next.message) return conditions ?? [];
  return [...rest, { ...next, lastUpdateTime: now() }];
}

export const isPaused = (cfg: NetCfg): boolean =>
  (cfg.spec as { paused?: boolean } | undefined)?.paused === true;

export const conditionIs = (conditions: Condition[] | undefined, type: string, status: string): boolean =>
  (conditions ?? []).some((c) => c.type === type && c.status === status);

export function inRange(ip: string | undefined, start = '', end = ''): boolean {
  const n = (v: string): number => v.split('.').reduce((a, o) => a * 256 + Number(o), 0);
  return Boolean(ip) && n(ip ?? '') >= n(start) && n(ip ?? '') <= n(end);
}

/** BuildCache: the network's IPAM with the server, router and excluded addresses revoked and the status's bookings in. */
export function ipamOfPool(pool: Pool): NetworkIpam {
  const v4 = pool.spec.ipv4Config ?? {};
  const net = new NetworkIpam(
    pool.spec.networkName ?? '',
    v4.cidr ?? '',
    v4.pool?.start ?? '',
    v4.pool?.end ?? '',
  );
  for (const ip of [v4.serverIP, v4.router, ...(v4.pool?.exclude ?? [])]) if (ip) net.revoke(ip);
  for (const [ip, mac] of Object.entries(pool.status?.ipv4?.allocated ?? {})) {
    if (mac === EXCLUDED_MARK || mac === RESERVED_MARK) continue;
    net.allocate(ip);
    net.addMac(mac, ip);
  }
  return net;
}

/** A running pool's status: RESERVED and EXCLUDED marks, used/available, its conditions (--no-agent). */
export function runningPoolStatus(
  s: PoolStatus,
  pool: Pool,
  net: NetworkIpam | undefined,
  buildError: Error | undefined,
): PoolStatus {
  const v4 = pool.spec.ipv4Config ?? {};
  const allocated = { ...(s.ipv4?.allocated ?? {}) };
  for (const ip of [v4.serverIP, v4.router])
    if (ip && inRange(ip, v4.pool?.start, v4.pool?.end)) allocated[ip] = RESERVED_MARK;
  for (const ip of v4.pool?.exclude ?? []) allocated[ip] = EXCLUDED_MARK;
  let conditions = setCondition(s.conditions, 'Stopped', new Error(''));
  conditions = setCondition(conditions, 'CacheReady', buildError);
  conditions = setCondition(conditions, 'Registered', undefined); // --no-agent
  conditions = setCondition(conditions, 'AgentReady', undefined);
  return {
    ...s,
    ipv4: {
      ...(Object.keys(allocated).length > 0 ? { allocated } : {}),
      used: net?.used() ?? 0,
      available: net?.available() ?? 0,
    },
    conditions,
  };
}

/** A pool's status with `ip` booked for `mac` (freed without one). */
export function bookedPoolStatus(
  s: PoolStatus,
  ip: string,
  mac: string | undefined,
  net: NetworkIpam | undefined,
): PoolStatus {
  const allocated = { ...(s.ipv4?.allocated ?? {}) };
  if (mac === undefined) delete allocated[ip];
  else allocated[ip] = mac;
  return { ...s, ipv4: { allocated, used: net?.used() ?? 0, available: net?.available() ?? 0 } };
}

/** A VM's MACs on Multus networks: its spec's, else Harvester's mac-address annotation's. */
export function networkConfigsOf(vm: VirtualMachine): NetworkConfigEntry[] {
  const byNic = new Map<string, string>();
  const raw = vm.metadata.annotations?.[Annotations.macAddress];
  if (raw) {
    try {
      for (const [nic, mac] of Object.entries(JSON.parse(raw) as Record<string, string>))
        if (mac) byNic.set(nic, mac);
    } catch {
      return [];
    }
  }
  for (const nic of vm.spec.template.spec.domain.devices?.interfaces ?? [])
    if (nic.macAddress) byNic.set(nic.name, nic.macAddress);
  const out: NetworkConfigEntry[] = [];
  for (const network of vm.spec.template.spec.networks ?? []) {
    const multus = (network as { multus?: { networkName?: string } }).multus;
    const mac = byNic.get(network.name);
    if (multus?.networkName && mac) out.push({ networkName: multus.networkName, macAddress: mac });
  }
  return out;
}

/** The VirtualMachineNetworkConfig of a VM, owned by it. */
export function networkConfigOfVm(vm: VirtualMachine, networkConfigs: NetworkConfigEntry[]): NetCfg {
  return {
    apiVersion: 'network.harvesterhci.io/v1alpha1',
    kind: 'VirtualMachineNetworkConfig',
    metadata: {
      name: vm.metadata.name,
      namespace: vm.metadata.namespace ?? '',
      labels: { [VM_LABEL]: vm.metadata.name },
      ownerReferences: [
        {
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachine',
          name: vm.metadata.name,
          uid: vm.metadata.uid ?? '',
        },
      ],
    },
    spec: { vmName: vm.metadata.name, networkConfigs },
  };
}

/** A config's status marked out of sync with its VM (the vm controller's first step on a change). */
export function outOfSyncStatus(status: NetCfg['status']): NetCfgStatus {
  return {
    ...status,
    conditions: [
      ...(status?.conditions ?? []).filter((x) => x.type !== 'InSynced'),
      {
        type: 'InSynced',
        status: 'False',
        reason: 'NetworkConfigChanged',
        message: 'Network configuration of the upstrem virtual machine has been changed',
      },
    ],
  };
}
