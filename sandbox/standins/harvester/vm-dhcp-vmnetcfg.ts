// vm-dhcp-controller's vmnetcfg controller (pkg/controller/vmnetcfg): Allocate (an address per
// MAC: the cached one, the one asked for, the one in its status, else a free one; booked in the
// IPPool's status), Sync (stale MACs released), OnChange (paused: released), OnRemove
// (everything released).
import { VmDhcpResources } from '../../../src/harvester-access/harvester-api.js';
import type { KubeClient } from '../../../src/kube/client.js';
import type { Controller } from '../../../src/kube/manager.js';
import type { KubeObject } from '../../../src/kube/resources.js';
import { formatKey, keyOf, type ObjectKey } from '../../../src/api/object-key.js';
import type { StandInContext } from '../context.js';
import { reconcileFinalizer } from '../finalizer.js';
import { sameJson } from '../runtime.js';
import { refOf, updateWithRetry } from '../writes.js';
import { conditionIs, isPaused, setCondition, type NetCfg, type NetCfgStatus } from './vm-dhcp-decisions.js';
import type { VmDhcpShared } from './vm-dhcp-shared.js';

/** wrangler's OnRemove handler "vm-dhcp-vmnetcfg-controller". */
export const FINALIZER_VMNETCFG = 'wrangler.cattle.io/vm-dhcp-vmnetcfg-controller';

const key = (o: KubeObject): string => formatKey(keyOf(o));

/** wrangler's status handler: the handler's status (or the old one on error), its condition set, written when changed. */
async function statusStep(
  client: KubeClient,
  cfg: NetCfg,
  type: string,
  handler: (c: NetCfg) => Promise<NetCfgStatus>,
): Promise<NetCfg> {
  let status: NetCfgStatus;
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
    VmDhcpResources.networkConfig,
    cfg,
    refOf(cfg),
    (c) => ({ ...c, status }),
    'status',
  );
  return written ?? cfg;
}

export function setupVmNetCfgController(
  ctx: StandInContext,
  shared: VmDhcpShared,
  random: () => number,
): Controller {
  const { client } = ctx;
  const { cfgs, pools, ipam, poolOfNetwork } = shared;

  async function allocate(cfg: NetCfg): Promise<NetCfgStatus> {
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
      await shared.book(network, ip, mac);
    }
    if (statuses.length === 0) throw new Error(`no network configs found for vmnetcfg ${key(cfg)}`);
    return { ...cfg.status, networkConfigs: statuses };
  }

  async function sync(cfg: NetCfg): Promise<NetCfgStatus> {
    if (isPaused(cfg)) throw new Error(`vmnetcfg ${key(cfg)} was administratively disabled`);
    const status = { ...cfg.status };
    if (conditionIs(status.conditions, 'InSynced', 'True')) return status;
    const macs = new Set((cfg.spec?.networkConfigs ?? []).map((n) => n.macAddress));
    const stale = (status.networkConfigs ?? []).filter((s) => !macs.has(s.macAddress));
    await shared.release(stale);
    return { ...status, networkConfigs: (status.networkConfigs ?? []).filter((s) => macs.has(s.macAddress)) };
  }

  async function reconcile(k: ObjectKey): Promise<void> {
    const current = cfgs.get(k);
    if (!current) return;
    const step = await reconcileFinalizer(
      client,
      VmDhcpResources.networkConfig,
      current,
      FINALIZER_VMNETCFG,
      (c) => shared.release(c.status?.networkConfigs ?? []),
    );
    if (step !== 'present') return;
    let cfg = await statusStep(client, current, 'Allocated', allocate);
    cfg = await statusStep(client, cfg, 'InSynced', sync);
    if (isPaused(cfg)) {
      await shared.release(cfg.status?.networkConfigs ?? []);
      const statuses = (cfg.status?.networkConfigs ?? []).map((s) => ({ ...s, state: 'Pending' }));
      const paused = { ...cfg.status, networkConfigs: statuses };
      await statusStep(client, cfg, 'Disabled', () => Promise.resolve(paused));
    } else {
      await statusStep(client, cfg, 'Disabled', () => Promise.reject(new Error('')));
    }
  }

  return (
    ctx.manager
      .controller('vm-dhcp-vmnetcfg', {
        reconcile,
        logger: ctx.logger.child({ controller: 'vm-dhcp-controller' }).child({ part: 'vmnetcfg' }),
      })
      .watch(cfgs)
      // A pool that becomes ready lets the configs waiting on it allocate.
      .watch(pools, (e) =>
        cfgs
          .list((c) =>
            (c.spec?.networkConfigs ?? []).some((n) => poolOfNetwork(n.networkName ?? '') === e.object),
          )
          .map(keyOf),
      )
  );
}
