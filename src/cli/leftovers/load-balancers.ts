// The load balancer half of `leftovers`: list Harvester's load balancers (and the VMs that
// tell whether their guest cluster is still there), and delete the leftovers one by one,
// each re-checked right before its delete against a fresh list and deleted only as the
// object that was listed (uid precondition).
import type { CliContext } from '../context.js';
import type { HarvesterApi } from '../../harvester-access/harvester-api.js';
import { isCredentialRejected, isForbidden, isNotFound } from '../../kube/errors.js';
import { redact } from '../../log/redact.js';
import {
  classifyLoadBalancer,
  lbClassifyContext,
  type LeftoverLoadBalancer,
  type LoadBalancer,
  type VmLike,
} from '../../harvester/load-balancers.js';
import { keyText } from '../../api/object-key.js';

export interface LbScan {
  /** undefined when Harvester serves no load balancers or the credential may not list them. */
  loadBalancers: LoadBalancer[] | undefined;
  /** Why they were not listed. */
  notListed?: string;
  /** The VMs that tell whether a guest cluster is still there: of every namespace readable. */
  vms: VmLike[];
  /** Where VMs could not be read: a cluster with VMs only there may look gone. */
  unreadable?: string[];
}

export interface GuestVms {
  vms: VmLike[];
  unreadable: string[];
}

/**
 * The VMs that say whether a guest cluster is gone: of every namespace the credential can
 * read, whatever --namespace is (a cluster's pools may put VMs in several namespaces, and
 * its cloud provider makes load balancers in only one of them). Cluster-wide if allowed,
 * else namespace by namespace; what could not be read is named.
 */
export async function guestClusterVms(
  harvester: HarvesterApi,
  namespace: string | undefined,
  scanned: readonly VmLike[],
): Promise<GuestVms> {
  if (namespace === undefined) return { vms: [...scanned], unreadable: [] };
  const forbidden = isForbidden;
  try {
    return { vms: await harvester.listVms(undefined), unreadable: [] };
  } catch (err) {
    if (!forbidden(err)) throw err;
  }
  let namespaces: string[];
  try {
    namespaces = await harvester.listNamespaceNames();
  } catch (err) {
    if (!forbidden(err)) throw err;
    return {
      vms: [...scanned],
      unreadable: [
        `every namespace but ${namespace} (the credential may list neither VMs cluster-wide nor namespaces)`,
      ],
    };
  }
  const vms: VmLike[] = [...scanned];
  const unreadable: string[] = [];
  for (const ns of namespaces.filter((n) => n !== namespace)) {
    try {
      vms.push(...(await harvester.listVms(ns)));
    } catch (err) {
      if (!forbidden(err)) throw err;
      unreadable.push(ns);
    }
  }
  return { vms, unreadable };
}

export async function scanLoadBalancers(
  harvester: HarvesterApi,
  namespace: string | undefined,
  scanned: readonly VmLike[],
): Promise<LbScan> {
  const { vms, unreadable } = await guestClusterVms(harvester, namespace, scanned);
  const seen = unreadable.length > 0 ? { unreadable } : {};
  try {
    return { loadBalancers: await harvester.listLoadBalancers(namespace), vms, ...seen };
  } catch (err) {
    if (isNotFound(err))
      return {
        loadBalancers: undefined,
        notListed: 'Harvester serves no loadbalancers.loadbalancer.harvesterhci.io',
        vms,
        ...seen,
      };
    if (isForbidden(err))
      return {
        loadBalancers: undefined,
        notListed: `the credential may not list load balancers: ${err.message}`,
        vms,
        ...seen,
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
  harvester: HarvesterApi,
  lb: LeftoverLoadBalancer,
  opts: { minAgeMs: number; includeUnknown: boolean; namespace: string | undefined },
): Promise<string | undefined> {
  const fresh = await harvester.findLoadBalancer(lb.namespace, lb.name);
  if (!fresh) return 'already gone';
  if (lb.uid && fresh.metadata.uid !== lb.uid) return 'replaced by a new load balancer of the same name';
  const scanned = await harvester.listVms(opts.namespace);
  const { vms } = await guestClusterVms(harvester, opts.namespace, scanned);
  const now = classifyLoadBalancer(fresh, lbClassifyContext(vms, new Date(), opts.minAgeMs));
  if (now.kind === 'skip') return now.reason;
  if (now.kind === 'not-considered') return 'no longer a guest-cluster load balancer';
  if (now.loadBalancer.cluster === null && !opts.includeUnknown)
    return 'its guest cluster is no longer known';
  return undefined;
}

export async function deleteLeftoverLoadBalancers(
  ctx: CliContext,
  harvester: HarvesterApi,
  targets: readonly LeftoverLoadBalancer[],
  opts: { minAgeMs: number; includeUnknown: boolean; namespace: string | undefined },
): Promise<LbDeletionOutcome> {
  const outcome: LbDeletionOutcome = { deleted: [], skipped: [], failed: [] };
  for (const lb of targets) {
    const ref = keyText(lb.namespace, lb.name);
    try {
      const reason = await recheck(harvester, lb, opts);
      if (reason) {
        outcome.skipped.push({ loadBalancer: ref, reason });
        ctx.note(`skipped load balancer ${ref}: ${reason}`);
        continue;
      }
      await harvester.deleteLoadBalancer(lb.namespace, lb.name, lb.uid);
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
