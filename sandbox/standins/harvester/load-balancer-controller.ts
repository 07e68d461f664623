// Harvester's load balancer controller (load-balancer-harvester, docs/upstream/load-balancers.md),
// the parts a guest cluster's load balancers go through:
// - "harvester-lb-controller": the wrangler finalizer on every load balancer; for `ipam: pool`
//   an address from the chosen IP pool, booked in the pool's status.allocated
//   (IP -> "<namespace>/<name>") and written to status.allocatedAddress and status.address;
//   for `ipam: dhcp` allocatedAddress.ip 0.0.0.0. On removal the address goes back to its
//   pool (allocated -> allocatedHistory) before the finalizer is removed.
// - "harvester-ippool": a new pool's status total/available.
// - "harvester-lb-vm-controller" (load-balancer-harvester v1.8.0 and later, so only while the
//   server-version setting says v1.8.0 or later): a guest-cluster VM annotated
//   removeAllPersistentVolumeClaims="true" that is being removed deletes the cluster-type load
//   balancers of its cluster in its namespace. Played when the VM gets its deletionTimestamp,
//   without the finalizer the real OnRemove handler puts on every VM.
// Not played: the webhook, VM-type load balancers' Services, health checks, kube-vip.
import { formatKey, keyOf, objectKey } from '../../../src/api/object-key.js';
import { ANNOTATION_REMOVE_ALL_PVCS, CREATOR, LABEL_CREATOR } from '../../../src/harvester/labels.js';
import {
  IPPOOL_LABEL_GLOBAL,
  LB_ANNOTATION_CLUSTER,
  LB_ANNOTATION_NAMESPACE,
  LB_ANNOTATION_NETWORK,
  LB_ANNOTATION_PROJECT,
  guestClusterLoadBalancers,
  harvesterLbCleanup,
  type IpPool,
  type LoadBalancer,
} from '../../../src/harvester/load-balancers.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { isNotFound } from '../../../src/kube/errors.js';
import type { Cache, Controller } from '../../../src/kube/manager.js';
import { Resources, type KubeObject } from '../../../src/kube/resources.js';
import type { Logger } from '../../../src/log/logger.js';
import type { StandInContext } from '../context.js';
import { Labels } from '../names.js';
import { nowIso } from '../runtime.js';
import type { VirtualMachine } from '../types.js';
import { reconcileFinalizer } from '../finalizer.js';
import { refOf, updateWithRetry } from '../writes.js';
import { ipPoolAddresses } from './ip-ranges.js';

export const FINALIZER_LB_CONTROLLER = 'wrangler.cattle.io/harvester-lb-controller';
const DHCP_ADDRESS = '0.0.0.0';

type Lb = LoadBalancer & KubeObject;
type Pool = IpPool & KubeObject;
interface Setting extends KubeObject {
  value?: string;
  default?: string;
}

/** load-balancer-harvester pkg/ipam/selector.go: highest priority among the matching pools, else the global one. */
export function selectIpPool(pools: readonly Pool[], lb: Lb, loose: boolean): Pool | undefined {
  const a = lb.metadata.annotations ?? {};
  const want = {
    network: a[LB_ANNOTATION_NETWORK] ?? '',
    project: a[LB_ANNOTATION_PROJECT] ?? '',
    namespace: a[LB_ANNOTATION_NAMESPACE] || (lb.metadata.namespace ?? ''),
    cluster: a[LB_ANNOTATION_CLUSTER] ?? '',
  };
  const eq = (mine: string | undefined, theirs: string, emptyMatches: boolean): boolean =>
    mine === '*' || theirs === '*' || (mine ?? '') === theirs || (emptyMatches && !mine);
  let selected: Pool | undefined;
  let global: Pool | undefined;
  let priority = -1;
  for (const pool of pools) {
    if (pool.metadata.labels?.[IPPOOL_LABEL_GLOBAL] === 'true') {
      global = pool;
      continue;
    }
    const selector = pool.spec.selector ?? {};
    if ((selector.network ?? '') !== want.network) continue;
    const matches = (selector.scope ?? []).some(
      (t) =>
        eq(t.project, want.project, loose) &&
        eq(t.namespace, want.namespace, false) &&
        eq(t.guestCluster, want.cluster, loose),
    );
    if (matches && (selector.priority ?? 0) >= priority) {
      selected = pool;
      priority = selector.priority ?? 0;
    }
  }
  return selected ?? global;
}

function serverVersion(settings: Cache<Setting>): string | undefined {
  const s = settings.get(objectKey('', 'server-version'));
  return s?.value || s?.default || undefined;
}

const condition = (status: 'True' | 'False', message?: string) => ({
  type: 'Ready',
  status,
  lastUpdateTime: nowIso(),
  ...(message ? { message } : {}),
});

/** Books the first free address of the pool for `owner` (or finds its booking); undefined when full. */
async function reserve(
  client: KubeClient,
  pool: Pool,
  owner: string,
): Promise<{ ip: string; pool: Pool } | undefined> {
  let booked: string | undefined;
  const written = await updateWithRetry(client, Resources.ipPool, pool, refOf(pool), (p) => {
    const { addresses } = ipPoolAddresses(p.spec.ranges);
    const allocated = { ...p.status?.allocated };
    booked = Object.entries(allocated).find(([, who]) => who === owner)?.[0];
    if (booked) return undefined;
    booked = addresses.find((ip) => allocated[ip] === undefined);
    if (!booked) return undefined;
    allocated[booked] = owner;
    const history = { ...p.status?.allocatedHistory };
    delete history[booked];
    p.status = {
      ...p.status,
      total: addresses.length,
      available: addresses.length - Object.keys(allocated).length,
      lastAllocated: booked,
      allocated,
      allocatedHistory: history,
    };
    return p;
  });
  return booked ? { ip: booked, pool: written ?? pool } : undefined;
}

async function release(client: KubeClient, pools: Cache<Pool>, lb: Lb): Promise<void> {
  const owner = formatKey(keyOf(lb));
  const poolName = lb.status?.allocatedAddress?.ipPool;
  const ip = lb.status?.allocatedAddress?.ip;
  if (!poolName || !ip) return;
  const pool = pools.get(objectKey('', poolName));
  await updateWithRetry(client, Resources.ipPool, pool, { name: poolName }, (p) => {
    if (p.status?.allocated?.[ip] !== owner) return undefined;
    const allocated = { ...p.status.allocated };
    delete allocated[ip];
    p.status = {
      ...p.status,
      allocated,
      allocatedHistory: { ...p.status.allocatedHistory, [ip]: owner },
      available: (p.status.available ?? 0) + 1,
    };
    return p;
  });
}

interface LbCaches {
  lbs: Cache<Lb>;
  pools: Cache<Pool>;
  vms: Cache<VirtualMachine>;
  settings: Cache<Setting>;
}

export function loadBalancerControllers(ctx: StandInContext): Controller[] {
  const caches: LbCaches = {
    lbs: ctx.manager.cache<Lb>({ type: Resources.loadBalancer }),
    pools: ctx.manager.cache<Pool>({ type: Resources.ipPool }),
    vms: ctx.manager.cache<VirtualMachine>({ type: Resources.virtualMachine }),
    settings: ctx.manager.cache<Setting>({ type: Resources.setting }),
  };
  const logger = ctx.logger.child({ controller: 'harvester-lb' });
  return [
    loadBalancerController(ctx, caches, logger),
    ipPoolController(ctx, caches, logger),
    guestClusterCleanup(ctx, caches, logger),
  ];
}

/** "harvester-lb-controller": the finalizer, an address from a pool (or DHCP), given back on removal. */
function loadBalancerController(ctx: StandInContext, { lbs, pools }: LbCaches, logger: Logger): Controller {
  const { client } = ctx;
  return ctx.manager
    .controller('harvester-lb', {
      reconcile: async (key) => {
        const lb = lbs.get(key);
        if (!lb) return;
        const step = await reconcileFinalizer(
          client,
          Resources.loadBalancer,
          lb,
          FINALIZER_LB_CONTROLLER,
          async () => {
            if (lb.spec?.ipam !== 'dhcp') await release(client, pools, lb);
          },
        );
        if (step === 'deleting' && (lb.metadata.finalizers ?? []).includes(FINALIZER_LB_CONTROLLER))
          logger.info('load balancer removed', { lb: formatKey(key), ip: lb.status?.allocatedAddress?.ip });
        if (step !== 'present') return; // an added finalizer comes back as an event
        if (lb.spec?.ipam === 'dhcp') {
          if (lb.status?.allocatedAddress?.ip === DHCP_ADDRESS) return;
          await updateWithRetry(client, Resources.loadBalancer, lb, refOf(lb), (o) => {
            o.status = {
              ...o.status,
              allocatedAddress: { ip: DHCP_ADDRESS },
              conditions: [condition('True')],
            };
            return o;
          });
          return;
        }
        if (lb.status?.allocatedAddress?.ipPool) return;
        const all = pools.list();
        const pool = lb.spec?.ipPool
          ? pools.get(objectKey('', lb.spec.ipPool))
          : (selectIpPool(all, lb, false) ??
            (lb.spec?.workloadType === 'cluster' ? selectIpPool(all, lb, true) : undefined));
        const booked = pool ? await reserve(client, pool, formatKey(key)) : undefined;
        const { mask, gateway } = pool ? ipPoolAddresses(pool.spec.ranges) : { mask: '', gateway: '' };
        await updateWithRetry(client, Resources.loadBalancer, lb, refOf(lb), (o) => {
          o.status = booked
            ? {
                ...o.status,
                address: booked.ip,
                allocatedAddress: {
                  ipPool: booked.pool.metadata.name,
                  ip: booked.ip,
                  mask,
                  ...(gateway ? { gateway } : {}),
                },
                conditions: [condition('True')],
              }
            : {
                ...o.status,
                conditions: [
                  condition(
                    'False',
                    pool ? `no available IP in pool ${pool.metadata.name}` : 'no matched IPPool',
                  ),
                ],
              };
          return o;
        });
        // A pool created later gets another look from the pool events below.
      },
      logger: logger,
    })
    .watch(lbs)
    .watch(pools, () => lbs.list((lb) => !lb.status?.allocatedAddress?.ipPool).map((lb) => keyOf(lb)));
}

/** "harvester-ippool": a new pool's status total and available. */
function ipPoolController(ctx: StandInContext, { pools }: LbCaches, logger: Logger): Controller {
  const { client } = ctx;
  return ctx.manager
    .controller('harvester-ippool', {
      reconcile: async (key) => {
        const pool = pools.get(key);
        if (!pool || pool.metadata.deletionTimestamp || pool.status?.total !== undefined) return;
        await updateWithRetry(client, Resources.ipPool, pool, refOf(pool), (p) => {
          const total = ipPoolAddresses(p.spec.ranges).addresses.length;
          const used = Object.keys(p.status?.allocated ?? {}).length;
          p.status = {
            ...p.status,
            total,
            available: total - used,
            lastAllocated: p.status?.lastAllocated ?? '',
          };
          return p;
        });
      },
      logger: logger,
    })
    .watch(pools);
}

/** "harvester-lb-vm-controller" (v1.8.0 on): an annotated guest-cluster VM removed takes its cluster's load balancers. */
function guestClusterCleanup(
  ctx: StandInContext,
  { lbs, vms, settings }: LbCaches,
  logger: Logger,
): Controller {
  const { client } = ctx;
  return ctx.manager
    .controller('harvester-lb-vm', {
      reconcile: async (key) => {
        const vm = vms.get(key);
        if (!vm?.metadata.deletionTimestamp) return;
        if (vm.metadata.labels?.[LABEL_CREATOR] !== CREATOR) return;
        if (vm.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS] !== 'true') return;
        const cluster = vm.metadata.labels?.[Labels.guestCluster];
        if (cluster === undefined) return;
        if (!harvesterLbCleanup(serverVersion(settings)).cleansUp) return;
        const namespace = vm.metadata.namespace ?? '';
        for (const lb of guestClusterLoadBalancers(lbs.list(), cluster, namespace)) {
          if (lb.metadata.deletionTimestamp) continue;
          try {
            await client.delete(Resources.loadBalancer, refOf(lb));
          } catch (err) {
            if (!isNotFound(err)) throw err;
          }
          logger.info('guest cluster removed: load balancer deleted', {
            vm: formatKey(key),
            lb: lb.metadata.name,
          });
        }
      },
      logger: logger,
    })
    .watch(vms);
}
