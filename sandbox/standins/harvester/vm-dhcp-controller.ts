// Harvester's vm-dhcp-controller add-on (harvester/vm-dhcp-controller at c3042d6,
// docs/upstream/vm-dhcp-controller.md), as run with --no-agent (the sandbox has no node
// for the DHCP agent pods; the guest stand-in asks the IPPool status instead, which is what
// the agent serves). Three controllers, each as upstream registers it:
// - ippool (pkg/controller/ippool): the network's labels naming its pool; BuildCache
//   (CacheReady), which rebuilds the IPAM and MAC cache from the pool's status; Registered
//   and AgentReady (true without an agent); status.ipv4 used/available and the RESERVED
//   (server, router) and EXCLUDED marks in allocated.
// - vm (pkg/controller/vm): a VirtualMachineNetworkConfig per VM with a MAC on a Multus
//   network (from the spec or Harvester's mac-address annotation), owned by the VM; a changed
//   VM marks it out of sync first (InSynced False), then updates its spec.
// - vmnetcfg (pkg/controller/vmnetcfg): Allocate (an address per MAC: the cached one, the
//   one asked for, the one in its status, else a free one; booked in the IPPool's status),
//   Sync (stale MACs released), OnChange (paused: released), OnRemove (everything released).
// Not played: the webhooks (they refuse bad pools and configs the driver never makes), the
// agent pods and metrics.
import { isKubeError } from '../../../src/kube/errors.js';
import { VmDhcpResources } from '../../../src/harvester-access/harvester-api.js';
import { Resources, type KubeObject } from '../../../src/kube/resources.js';
import {
  EXCLUDED_MARK,
  RESERVED_MARK,
  ipPoolOfNetwork,
  LABEL_IPPOOL_NAME,
  LABEL_IPPOOL_NAMESPACE,
  type Condition,
  type VmDhcpIpPool,
  type VmNetworkConfig,
} from '../../../src/harvester/fixed-addresses/vm-dhcp.js';
import type { StandInContext } from '../context.js';
import { Annotations } from '../names.js';
import { formatKey, keyOf, parseKey, type ObjectKey } from '../../../src/api/object-key.js';
import type { Controller } from '../../../src/kube/manager.js';
import { nowIso, sameJson } from '../runtime.js';
import type { VirtualMachine } from '../types.js';
import { patchFinalizers, refOf, updateWithRetry, withFinalizer, withoutFinalizer } from '../writes.js';
import { NetworkIpam } from './vm-dhcp-ipam.js';

/** The add-on's kinds, as the driver reads them. */
export const VmDhcpTypes = VmDhcpResources;
/** wrangler's OnRemove handler "vm-dhcp-vmnetcfg-controller". */
export const FINALIZER_VMNETCFG = 'wrangler.cattle.io/vm-dhcp-vmnetcfg-controller';
const VM_LABEL = 'harvesterhci.io/vmName';

type Pool = VmDhcpIpPool & KubeObject & { spec: NonNullable<VmDhcpIpPool['spec']> };
type NetCfg = VmNetworkConfig & KubeObject;
type Nad = KubeObject;

/** wrangler's condition.SetError: True (message cleared) without an error, else False, reason Error. */
function setCondition(conditions: Condition[] | undefined, type: string, err: unknown): Condition[] {
  const rest = (conditions ?? []).filter((c) => c.type !== type);
  const old = (conditions ?? []).find((c) => c.type === type);
  const next: Condition & { lastUpdateTime?: string } = err
    ? { type, status: 'False', reason: 'Error', message: (err as Error).message }
    : { type, status: 'True', reason: old?.status === 'True' ? (old.reason ?? '') : '', message: '' };
  if (old && old.status === next.status && old.message === next.message) return conditions ?? [];
  return [...rest, { ...next, lastUpdateTime: nowIso() }];
}
const isPaused = (cfg: NetCfg): boolean => (cfg.spec as { paused?: boolean } | undefined)?.paused === true;
const conditionIs = (conditions: Condition[] | undefined, type: string, status: string): boolean =>
  (conditions ?? []).some((c) => c.type === type && c.status === status);

export function vmDhcpControllers(ctx: StandInContext, random: () => number = Math.random): Controller[] {
  const { client } = ctx;
  const pools = ctx.manager.cache<Pool>({ type: VmDhcpTypes.ipPool });
  const cfgs = ctx.manager.cache<NetCfg>({ type: VmDhcpTypes.networkConfig });
  const nads = ctx.manager.cache<Nad>({ type: Resources.networkAttachmentDefinition });
  const vms = ctx.manager.cache<VirtualMachine>({ type: Resources.virtualMachine });
  /** Per network ("namespace/name" as the pool names it): the IPAM and MAC cache. */
  const ipam = new Map<string, NetworkIpam>();
  const log = ctx.logger.child({ controller: 'vm-dhcp-controller' });

  const poolOfNetwork = (network: string): Pool | undefined => {
    const ref = ipPoolOfNetwork(nads.get(parseKey(network))?.metadata.labels);
    return ref ? pools.get(ref) : undefined;
  };

  // ---- ippool ----
  function buildCache(pool: Pool): void {
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
    ipam.set(pool.spec.networkName ?? '', net);
  }

  const inRange = (ip: string | undefined, start = '', end = ''): boolean => {
    const n = (v: string): number => v.split('.').reduce((a, o) => a * 256 + Number(o), 0);
    return Boolean(ip) && n(ip ?? '') >= n(start) && n(ip ?? '') <= n(end);
  };

  async function reconcilePool(key: ObjectKey): Promise<void> {
    const pool = pools.get(key);
    if (!pool || pool.metadata.deletionTimestamp) return;
    const network = pool.spec.networkName ?? '';
    const nadKey = parseKey(network);
    const nad = nads.get(nadKey);
    if (!nad) throw new Error(`network-attachment-definitions "${nadKey.name}" not found`);
    await updateWithRetry(client, Resources.networkAttachmentDefinition, nad, refOf(nad), (n) => {
      const labels = n.metadata.labels ?? {};
      if (
        labels[LABEL_IPPOOL_NAMESPACE] === pool.metadata.namespace &&
        labels[LABEL_IPPOOL_NAME] === pool.metadata.name
      )
        return undefined;
      n.metadata.labels = {
        ...labels,
        [LABEL_IPPOOL_NAMESPACE]: pool.metadata.namespace ?? '',
        [LABEL_IPPOOL_NAME]: pool.metadata.name,
      };
      return n;
    });
    if (pool.spec.paused) {
      ipam.delete(network);
      await writePoolStatus(pool, (s) => ({
        ...s,
        conditions: setCondition(s.conditions, 'Stopped', undefined),
      }));
      return;
    }
    let buildError: Error | undefined;
    if (!ipam.has(network) || !conditionIs(pool.status?.conditions, 'CacheReady', 'True')) {
      try {
        buildCache(pool);
      } catch (err) {
        buildError = err instanceof Error ? err : new Error(String(err));
        ipam.delete(network);
      }
    }
    const net = ipam.get(network);
    const v4 = pool.spec.ipv4Config ?? {};
    await writePoolStatus(pool, (s) => {
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
    });
    if (buildError) throw buildError;
  }

  async function writePoolStatus(
    pool: Pool,
    change: (s: NonNullable<Pool['status']>) => NonNullable<Pool['status']>,
  ): Promise<void> {
    await updateWithRetry(
      client,
      VmDhcpTypes.ipPool,
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

  /** Books (or frees) an address in its pool's status.ipv4.allocated. */
  async function book(network: string, ip: string, mac: string | undefined): Promise<void> {
    const pool = poolOfNetwork(network);
    if (!pool) return;
    await writePoolStatus(pool, (s) => {
      const allocated = { ...(s.ipv4?.allocated ?? {}) };
      if (mac === undefined) delete allocated[ip];
      else allocated[ip] = mac;
      const net = ipam.get(network);
      return { ...s, ipv4: { allocated, used: net?.used() ?? 0, available: net?.available() ?? 0 } };
    });
  }

  // ---- vm ----
  function networkConfigsOf(vm: VirtualMachine): Array<{ networkName: string; macAddress: string }> {
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
    const out: Array<{ networkName: string; macAddress: string }> = [];
    for (const network of vm.spec.template.spec.networks ?? []) {
      const multus = (network as { multus?: { networkName?: string } }).multus;
      const mac = byNic.get(network.name);
      if (multus?.networkName && mac) out.push({ networkName: multus.networkName, macAddress: mac });
    }
    return out;
  }

  async function createConfig(
    vm: VirtualMachine,
    networkConfigs: Array<{ networkName: string; macAddress: string }>,
  ): Promise<void> {
    try {
      await client.create<NetCfg>(VmDhcpTypes.networkConfig, {
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
      });
    } catch (err) {
      // The cache has not seen it yet: the next event of the config brings it.
      if (!isKubeError(err, 'AlreadyExists')) throw err;
    }
  }

  async function reconcileVm(key: ObjectKey): Promise<void> {
    const vm = vms.get(key);
    if (!vm || vm.metadata.deletionTimestamp) return;
    const networkConfigs = networkConfigsOf(vm);
    if (networkConfigs.length === 0) return;
    const existing = cfgs.get(key);
    if (!existing) {
      await createConfig(vm, networkConfigs);
      return;
    }
    if (sameJson(existing.spec?.networkConfigs ?? [], networkConfigs)) return;
    if (conditionIs(existing.status?.conditions, 'InSynced', 'False')) {
      await updateWithRetry(client, VmDhcpTypes.networkConfig, existing, refOf(existing), (c) => ({
        ...c,
        spec: { ...c.spec, vmName: c.spec?.vmName ?? '', networkConfigs },
      }));
      return;
    }
    await updateWithRetry(
      client,
      VmDhcpTypes.networkConfig,
      existing,
      refOf(existing),
      (c) => ({
        ...c,
        status: {
          ...c.status,
          conditions: [
            ...(c.status?.conditions ?? []).filter((x) => x.type !== 'InSynced'),
            {
              type: 'InSynced',
              status: 'False',
              reason: 'NetworkConfigChanged',
              message: 'Network configuration of the upstrem virtual machine has been changed',
            },
          ],
        },
      }),
      'status',
    );
    vmController.enqueue(key);
  }

  // ---- vmnetcfg ----
  async function release(
    statuses: NonNullable<NonNullable<NetCfg['status']>['networkConfigs']>,
  ): Promise<void> {
    for (const s of statuses) {
      const net = ipam.get(s.networkName ?? '');
      if (!net || !s.allocatedIPAddress) continue;
      if (net.isAllocated(s.allocatedIPAddress)) net.deallocate(s.allocatedIPAddress);
      net.deleteMac(s.macAddress ?? '');
      await book(s.networkName ?? '', s.allocatedIPAddress, undefined);
    }
  }

  async function allocate(cfg: NetCfg): Promise<NonNullable<NetCfg['status']>> {
    if (isPaused(cfg)) throw new Error(`vmnetcfg ${key(cfg)} was administratively disabled`);
    if (conditionIs(cfg.status?.conditions, 'InSynced', 'False'))
      throw new Error(`vmnetcfg ${key(cfg)} is out-of-sync; waiting for reconcile`);
    const statuses = [];
    for (const nc of cfg.spec?.networkConfigs ?? []) {
      const network = nc.networkName ?? '';
      const mac = nc.macAddress ?? '';
      const pool = poolOfNetwork(network);
      if (!pool) throw new Error(`ippool for network ${network} not found`);
      if (!conditionIs(pool.status?.conditions, 'CacheReady', 'True'))
        throw new Error(`ippool ${key(pool)} is not ready`);
      const net = ipam.get(network);
      if (!net) throw new Error(`network ${network} does not exist`);
      let ip = net.ipOfMac(mac);
      if (ip === undefined) {
        const fromStatus = cfg.status?.networkConfigs?.find(
          (s) => s.macAddress === mac && s.allocatedIPAddress,
        )?.allocatedIPAddress;
        ip = net.allocate(fromStatus ?? nc.ipAddress, random);
        net.addMac(mac, ip);
      }
      statuses.push({ allocatedIPAddress: ip, macAddress: mac, networkName: network, state: 'Allocated' });
      await book(network, ip, mac);
    }
    if (statuses.length === 0) throw new Error(`no network configs found for vmnetcfg ${key(cfg)}`);
    return { ...cfg.status, networkConfigs: statuses };
  }

  async function sync(cfg: NetCfg): Promise<NonNullable<NetCfg['status']>> {
    if (isPaused(cfg)) throw new Error(`vmnetcfg ${key(cfg)} was administratively disabled`);
    const status = { ...cfg.status };
    if (conditionIs(status.conditions, 'InSynced', 'True')) return status;
    const macs = new Set((cfg.spec?.networkConfigs ?? []).map((n) => n.macAddress));
    const stale = (status.networkConfigs ?? []).filter((s) => !macs.has(s.macAddress));
    await release(stale);
    return { ...status, networkConfigs: (status.networkConfigs ?? []).filter((s) => macs.has(s.macAddress)) };
  }

  /** wrangler's status handler: the handler's status (or the old one on error), its condition set, written when changed. */
  async function statusStep(
    cfg: NetCfg,
    type: string,
    handler: (c: NetCfg) => Promise<NonNullable<NetCfg['status']>>,
  ): Promise<NetCfg> {
    let status: NonNullable<NetCfg['status']>;
    let error: unknown;
    try {
      status = await handler(cfg);
    } catch (err) {
      error = err;
      status = { ...cfg.status };
    }
    status = { ...status, conditions: setCondition(status.conditions, type, error) };
    if (sameJson(status, cfg.status ?? {})) return cfg;
    const written = await updateWithRetry(
      client,
      VmDhcpTypes.networkConfig,
      cfg,
      refOf(cfg),
      (c) => ({ ...c, status }),
      'status',
    );
    return written ?? cfg;
  }

  async function reconcileCfg(k: ObjectKey): Promise<void> {
    let cfg = cfgs.get(k);
    if (!cfg) return;
    if (cfg.metadata.deletionTimestamp) {
      if (!(cfg.metadata.finalizers ?? []).includes(FINALIZER_VMNETCFG)) return;
      await release(cfg.status?.networkConfigs ?? []);
      await patchFinalizers(client, VmDhcpTypes.networkConfig, cfg, withoutFinalizer(FINALIZER_VMNETCFG));
      return;
    }
    if (await patchFinalizers(client, VmDhcpTypes.networkConfig, cfg, withFinalizer(FINALIZER_VMNETCFG)))
      return;
    cfg = await statusStep(cfg, 'Allocated', allocate);
    cfg = await statusStep(cfg, 'InSynced', sync);
    if (isPaused(cfg)) {
      await release(cfg.status?.networkConfigs ?? []);
      const statuses = (cfg.status?.networkConfigs ?? []).map((s) => ({ ...s, state: 'Pending' }));
      await statusStep(cfg, 'Disabled', () => Promise.resolve({ ...cfg?.status, networkConfigs: statuses }));
    } else {
      await statusStep(cfg, 'Disabled', () => Promise.reject(new Error('')));
    }
  }

  const key = (o: KubeObject): string => formatKey(keyOf(o));

  const controller = (name: string, reconcile: (key: ObjectKey) => Promise<void>, part: string): Controller =>
    ctx.manager.controller(name, { reconcile, logger: log.child({ part }) });
  const poolController = controller('vm-dhcp-ippool', reconcilePool, 'ippool')
    .watch(pools)
    .watch(nads, (e) => ipPoolOfNetwork(e.object.metadata.labels));
  const vmController = controller('vm-dhcp-vm', reconcileVm, 'vm').watch(vms);
  const cfgController = controller('vm-dhcp-vmnetcfg', reconcileCfg, 'vmnetcfg')
    .watch(cfgs)
    // A pool that becomes ready lets the configs waiting on it allocate.
    .watch(pools, (e) =>
      cfgs
        .list((c) =>
          (c.spec?.networkConfigs ?? []).some((n) => poolOfNetwork(n.networkName ?? '') === e.object),
        )
        .map(keyOf),
    );
  return [poolController, vmController, cfgController];
}
