// vm-dhcp-controller's ippool controller (pkg/controller/ippool): the network's labels naming
// its pool, BuildCache (CacheReady), Registered and AgentReady, used/available and the marks.
import {
  LABEL_IPPOOL_NAME,
  LABEL_IPPOOL_NAMESPACE,
  ipPoolOfNetwork,
} from '../../../src/harvester/fixed-addresses/vm-dhcp.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources, type KubeObject } from '../../../src/kube/resources.js';
import { parseKey, type ObjectKey } from '../../../src/api/object-key.js';
import type { StandInContext } from '../context.js';
import { refOf, updateWithRetry } from '../writes.js';
import { conditionIs, ipamOfPool, runningPoolStatus, setCondition, type Pool } from './vm-dhcp-decisions.js';
import type { VmDhcpShared } from './vm-dhcp-shared.js';

/** The network's labels naming its pool; undefined when they already do. */
function labelledForPool(nad: KubeObject, pool: Pool): KubeObject | undefined {
  const labels = nad.metadata.labels ?? {};
  if (
    labels[LABEL_IPPOOL_NAMESPACE] === pool.metadata.namespace &&
    labels[LABEL_IPPOOL_NAME] === pool.metadata.name
  )
    return undefined;
  nad.metadata.labels = {
    ...labels,
    [LABEL_IPPOOL_NAMESPACE]: pool.metadata.namespace ?? '',
    [LABEL_IPPOOL_NAME]: pool.metadata.name,
  };
  return nad;
}

export function setupIpPoolController(ctx: StandInContext, shared: VmDhcpShared): Controller {
  const { client } = ctx;
  const { pools, nads, ipam } = shared;

  /** BuildCache when there is none or the pool says it is not ready; the error it met, if any. */
  function buildCache(pool: Pool, network: string): Error | undefined {
    if (ipam.has(network) && conditionIs(pool.status?.conditions, 'CacheReady', 'True')) return undefined;
    try {
      ipam.set(network, ipamOfPool(pool));
      return undefined;
    } catch (err) {
      ipam.delete(network);
      return err instanceof Error ? err : new Error(String(err));
    }
  }

  async function reconcile(key: ObjectKey): Promise<void> {
    const pool = pools.get(key);
    if (!pool || pool.metadata.deletionTimestamp) return;
    const network = pool.spec.networkName ?? '';
    const nadKey = parseKey(network);
    const nad = nads.get(nadKey);
    if (!nad) throw new Error(`network-attachment-definitions "${nadKey.name}" not found`);
    await updateWithRetry(client, Resources.networkAttachmentDefinition, nad, refOf(nad), (n) =>
      labelledForPool(n, pool),
    );
    if (pool.spec.paused) {
      ipam.delete(network);
      await shared.writePoolStatus(pool, (s) => ({
        ...s,
        conditions: setCondition(s.conditions, 'Stopped', undefined),
      }));
      return;
    }
    const buildError = buildCache(pool, network);
    const net = ipam.get(network);
    await shared.writePoolStatus(pool, (s) => runningPoolStatus(s, pool, net, buildError));
    if (buildError) throw buildError;
  }

  return ctx.manager
    .controller('vm-dhcp-ippool', {
      reconcile,
      logger: ctx.logger.child({ controller: 'vm-dhcp-controller' }).child({ part: 'ippool' }),
    })
    .watch(pools)
    .watch(nads, (e) => ipPoolOfNetwork(e.object.metadata.labels));
}
