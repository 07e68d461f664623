// The load balancer half of `leftovers`: list Harvester's load balancers (and the VMs that
// tell whether their guest cluster is still there), and delete the leftovers one by one,
// each re-checked right before its delete against a fresh list and deleted only as the
// object that was listed (uid precondition).
import type { CliContext } from '../context.js';
import type { KubeClient } from '../../kube/client.js';
import { isCredentialRejected, isForbidden, isNotFound } from '../../kube/errors.js';
import { Resources, type KubeObject } from '../../kube/resources.js';
import { redact } from '../../log/redact.js';
import {
  classifyLoadBalancer,
  lbClassifyContext,
  type LeftoverLoadBalancer,
  type LoadBalancer,
  type VmLike,
} from '../../harvester/load-balancers.js';

export interface LbScan {
  /** undefined when Harvester serves no load balancers or the credential may not list them. */
  loadBalancers: LoadBalancer[] | undefined;
  /** Why they were not listed. */
  notListed?: string;
  vms: VmLike[];
}

export async function scanLoadBalancers(
  client: KubeClient,
  namespace: string | undefined,
  vms: readonly VmLike[],
): Promise<LbScan> {
  try {
    const list = await client.list<KubeObject>(
      Resources.loadBalancer,
      namespace !== undefined ? { namespace } : {},
    );
    return { loadBalancers: list.items as unknown as LoadBalancer[], vms: [...vms] };
  } catch (err) {
    if (isNotFound(err))
      return {
        loadBalancers: undefined,
        notListed: 'Harvester serves no loadbalancers.loadbalancer.harvesterhci.io',
        vms: [...vms],
      };
    if (isForbidden(err))
      return {
        loadBalancers: undefined,
        notListed: `the credential may not list load balancers: ${err.message}`,
        vms: [...vms],
      };
    throw err;
  }
}

export interface LbDeletionOutcome {
  deleted: string[];
  skipped: Array<{ loadBalancer: string; reason: string }>;
  failed: Array<{ loadBalancer: string; error: string }>;
}

async function recheck(
  client: KubeClient,
  lb: LeftoverLoadBalancer,
  opts: { minAgeMs: number; includeUnknown: boolean; namespace: string | undefined },
): Promise<string | undefined> {
  const fresh = await client.find<KubeObject>(Resources.loadBalancer, {
    namespace: lb.namespace,
    name: lb.name,
  });
  if (!fresh) return 'already gone';
  if (lb.uid && fresh.metadata.uid !== lb.uid) return 'replaced by a new load balancer of the same name';
  const vms = await client.list<KubeObject>(
    Resources.virtualMachine,
    opts.namespace !== undefined ? { namespace: opts.namespace } : {},
  );
  const now = classifyLoadBalancer(
    fresh,
    lbClassifyContext(vms.items, new Date(), opts.minAgeMs),
  );
  if (now.kind === 'skip') return now.reason;
  if (now.kind === 'not-considered') return 'no longer a guest-cluster load balancer';
  if (now.loadBalancer.cluster === null && !opts.includeUnknown)
    return 'its guest cluster is no longer known';
  return undefined;
}

export async function deleteLeftoverLoadBalancers(
  ctx: CliContext,
  client: KubeClient,
  targets: readonly LeftoverLoadBalancer[],
  opts: { minAgeMs: number; includeUnknown: boolean; namespace: string | undefined },
): Promise<LbDeletionOutcome> {
  const outcome: LbDeletionOutcome = { deleted: [], skipped: [], failed: [] };
  for (const lb of targets) {
    const ref = `${lb.namespace}/${lb.name}`;
    try {
      const reason = await recheck(client, lb, opts);
      if (reason) {
        outcome.skipped.push({ loadBalancer: ref, reason });
        ctx.note(`skipped load balancer ${ref}: ${reason}`);
        continue;
      }
      await client.delete(
        Resources.loadBalancer,
        { namespace: lb.namespace, name: lb.name },
        lb.uid ? { preconditions: { uid: lb.uid } } : {},
      );
      outcome.deleted.push(ref);
      ctx.note(`deleted load balancer ${ref}${lb.address ? ` (releases ${lb.address})` : ''}`);
    } catch (err) {
      if (isCredentialRejected(err)) throw err;
      const error = redact((err as Error).message);
      outcome.failed.push({ loadBalancer: ref, error });
      ctx.note(`failed load balancer ${ref}: ${error}`);
    }
  }
  return outcome;
}
