// The load balancers Harvester's cloud provider makes for a guest cluster, and what to do
// with them when the whole cluster is deleted (docs/upstream/load-balancers.md). Pure: the
// cleanup controller, the CLI's `leftovers` and the removal preview list the objects and
// act on what these functions decide.
import { ANNOTATION_REMOVE_ALL_PVCS, LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import type { ObjectMeta } from './types.js';
import { keyText, keyTextOf } from '../api/object-key.js';

// ---- names (cloud-provider-harvester pkg/utils/consts.go, load-balancer-harvester pkg/utils/const.go) ----
export const LB_LABEL_CLUSTER = 'cloudprovider.harvesterhci.io/cluster';
export const LB_LABEL_SERVICE_NAMESPACE = 'cloudprovider.harvesterhci.io/serviceNamespace';
export const LB_LABEL_SERVICE_NAME = 'cloudprovider.harvesterhci.io/serviceName';
export const LB_ANNOTATION_CLUSTER = 'loadbalancer.harvesterhci.io/cluster';
export const LB_ANNOTATION_NETWORK = 'loadbalancer.harvesterhci.io/network';
export const LB_ANNOTATION_PROJECT = 'loadbalancer.harvesterhci.io/project';
export const LB_ANNOTATION_NAMESPACE = 'loadbalancer.harvesterhci.io/namespace';
/** On an IP pool: the pool used when no other matches. */
export const IPPOOL_LABEL_GLOBAL = 'loadbalancer.harvesterhci.io/global-ip-pool';
/** The cloud-controller-manager framework's --cluster-name when none is given. */
export const CCM_DEFAULT_CLUSTER_NAME = 'kubernetes';
/** The first Harvester whose load balancer controller deletes a deleted guest cluster's load balancers. */
export const HARVESTER_CLEANS_LOAD_BALANCERS_SINCE = 'v1.8.0';

export interface LoadBalancer {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    description?: string;
    workloadType?: string;
    ipam?: string;
    ipPool?: string;
    listeners?: unknown[];
  };
  status?: {
    address?: string;
    allocatedAddress?: { ipPool?: string; ip?: string; mask?: string; gateway?: string };
    conditions?: Array<{ type: string; status: string; message?: string }>;
  };
}

export interface IpPool {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    description?: string;
    ranges: Array<{ subnet: string; rangeStart?: string; rangeEnd?: string; gateway?: string }>;
    selector?: {
      priority?: number;
      network?: string;
      scope?: Array<{ project?: string; namespace?: string; guestCluster?: string }>;
    };
  };
  status?: {
    total?: number;
    available?: number;
    lastAllocated?: string;
    allocated?: Record<string, string>;
    allocatedHistory?: Record<string, string>;
  };
}

/** Only the fields these rules read: any VM-like object will do. */
export interface VmLike {
  metadata: Partial<Pick<ObjectMeta, 'name' | 'namespace' | 'labels' | 'deletionTimestamp'>>;
}

/** An empty or `kubernetes` cluster name: the cloud provider ran without --cluster-name. */
export function isAmbiguousClusterName(name: string | undefined): boolean {
  return !name || name === CCM_DEFAULT_CLUSTER_NAME;
}

export const lbClusterOf = (lb: LoadBalancer): string | undefined => lb.metadata.labels?.[LB_LABEL_CLUSTER];
export const isGuestClusterLoadBalancer = (lb: LoadBalancer): boolean => lb.spec?.workloadType === 'cluster';

/** The load balancers the cloud provider made for `cluster` in `namespace`. */
export function guestClusterLoadBalancers<T extends LoadBalancer>(
  lbs: readonly T[],
  cluster: string,
  namespace: string,
): T[] {
  return lbs.filter(
    (lb) =>
      lb.metadata.namespace === namespace && isGuestClusterLoadBalancer(lb) && lbClusterOf(lb) === cluster,
  );
}

/** "default/nginx" when the cloud provider recorded its Service. */
export function serviceOf(lb: LoadBalancer): string | undefined {
  const ns = lb.metadata.labels?.[LB_LABEL_SERVICE_NAMESPACE];
  const name = lb.metadata.labels?.[LB_LABEL_SERVICE_NAME];
  return ns && name ? keyText(ns, name) : undefined;
}

/** "10.0.0.10 from pool sandbox-pool", "DHCP", or undefined before an address is allocated. */
export function addressOf(lb: LoadBalancer): string | undefined {
  const allocated = lb.status?.allocatedAddress;
  if (lb.spec?.ipam === 'dhcp') return lb.status?.address ? `${lb.status.address} (DHCP)` : 'DHCP';
  if (!allocated?.ip) return undefined;
  return allocated.ipPool ? `${allocated.ip} from IP pool ${allocated.ipPool}` : allocated.ip;
}

/** One line about a load balancer: its Service and the address it holds. */
export function describeLoadBalancer(lb: LoadBalancer): string {
  const parts = [keyTextOf(lb)];
  const service = serviceOf(lb);
  if (service) parts.push(`for Service ${service}`);
  const address = addressOf(lb);
  if (address) parts.push(`holding ${address}`);
  return parts.join(' ');
}

// ---- Harvester versions ----

interface Version {
  major: number;
  minor: number;
  patch: number;
  prerelease: boolean;
}

/** "v1.8.0", "v1.7.1-rc2", "1.8.1"; undefined for anything else ("master-abc-head"). */
export function parseHarvesterVersion(text: string | undefined): Version | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?$/.exec((text ?? '').trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), prerelease: m[4] !== undefined };
}

export type HarvesterLbCleanup =
  /** This Harvester deletes them itself when the cluster's last VM goes (harvester#9452). */
  { cleansUp: true; why: string } | { cleansUp: false; why: string };

/**
 * Does this Harvester (its `server-version` setting) delete a deleted guest cluster's load
 * balancers itself? v1.8.0 and later do; a pre-release of v1.8.0 is counted as older, and a
 * version that does not parse as well: deleting what Harvester would have deleted anyway is
 * harmless, leaving what it does not costs an IP address for good.
 */
export function harvesterLbCleanup(serverVersion: string | undefined): HarvesterLbCleanup {
  const v = parseHarvesterVersion(serverVersion);
  if (!v)
    return {
      cleansUp: false,
      why: `Harvester's server-version ${serverVersion === undefined ? 'is not set' : `"${serverVersion}" is not a release version`}: treated as a Harvester that leaves them`,
    };
  const since = parseHarvesterVersion(HARVESTER_CLEANS_LOAD_BALANCERS_SINCE) as Version;
  const newer =
    v.major !== since.major
      ? v.major > since.major
      : v.minor !== since.minor
        ? v.minor > since.minor
        : v.patch !== since.patch
          ? v.patch > since.patch
          : !v.prerelease;
  return newer
    ? {
        cleansUp: true,
        why: `Harvester ${serverVersion} deletes them itself when the cluster's last VM goes (load-balancer-harvester ${HARVESTER_CLEANS_LOAD_BALANCERS_SINCE}, harvester#9452)`,
      }
    : {
        cleansUp: false,
        why: `Harvester ${serverVersion} leaves them (its load balancer controller deletes them only from ${HARVESTER_CLEANS_LOAD_BALANCERS_SINCE} on, harvester#9452)`,
      };
}

// ---- the cleanup controller's decision, for one cluster in one namespace ----

export type LbCleanupDecision =
  | { action: 'refuse'; reason: string }
  | { action: 'wait'; reason: string; vms: string[] }
  | { action: 'none'; reason: string }
  | { action: 'delete'; reason: string; loadBalancers: LoadBalancer[] };

/**
 * After the whole guest cluster was deleted in Rancher: what to do with its load balancers
 * in `namespace`, given every VM and load balancer listed there now and the Harvester
 * version. Load balancers already being deleted are left to finish.
 *
 * Rules, the same everywhere:
 * - A guest cluster's load balancers are the `workloadType: cluster` ones in the VMs'
 *   namespace labelled `cloudprovider.harvesterhci.io/cluster: <cluster>` (Harvester's own
 *   cleanup selects exactly these). Harvester's VM load balancers (`vm`) are never touched.
 * - Nothing is deleted while any VM of the cluster is left in that namespace, being deleted
 *   or not: its cloud provider may still be running and would make them again.
 * - A cluster name that the cloud provider falls back to (`kubernetes`, or empty) names no
 *   cluster in particular: such load balancers are never deleted for a cluster.
 */
export function decideLoadBalancerCleanup(input: {
  cluster: string;
  namespace: string;
  vms: readonly VmLike[];
  loadBalancers: readonly LoadBalancer[];
  serverVersion: string | undefined;
}): LbCleanupDecision {
  const { cluster, namespace } = input;
  if (isAmbiguousClusterName(cluster))
    return {
      action: 'refuse',
      reason: `guest cluster name "${cluster}" is what the cloud provider uses without --cluster-name: its load balancers cannot be told from other clusters'`,
    };
  const vms = input.vms
    .filter(
      (v) => v.metadata.namespace === namespace && v.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === cluster,
    )
    .map(
      (v) =>
        `${keyText(namespace, v.metadata.name)}${v.metadata.deletionTimestamp ? ' (being deleted)' : ''}`,
    );
  if (vms.length > 0)
    return {
      action: 'wait',
      vms,
      reason: `guest cluster ${cluster} still has ${vms.length} VM(s) in ${namespace} (${vms.join(', ')}): its cloud provider may still run`,
    };
  const version = harvesterLbCleanup(input.serverVersion);
  const left = guestClusterLoadBalancers(input.loadBalancers, cluster, namespace).filter(
    (lb) => !lb.metadata.deletionTimestamp,
  );
  if (left.length === 0)
    return {
      action: 'none',
      reason: `no load balancer of guest cluster ${cluster} is left in ${namespace}${version.cleansUp ? ` (${version.why})` : ''}`,
    };
  return {
    action: 'delete',
    loadBalancers: left,
    reason: version.cleansUp
      ? `its last VM is gone and Harvester did not delete them, although ${version.why}: the VMs were removed without ${ANNOTATION_REMOVE_ALL_PVCS}="true"`
      : `its last VM is gone and ${version.why}`,
  };
}

// ---- `harvester-machine leftovers`: load balancers of guest clusters that have no VM left ----

export type LbSkipBucket = 'liveCluster' | 'tooNew' | 'deleting';

export interface LeftoverLoadBalancer {
  namespace: string;
  name: string;
  uid?: string;
  /** null: the cloud provider named no cluster in particular (no --cluster-name). */
  cluster: string | null;
  service?: string;
  address?: string;
  createdAt?: string;
  ageMs: number;
}

export interface LeftoverLbReport {
  groups: Array<{ cluster: string | null; loadBalancers: LeftoverLoadBalancer[] }>;
  skipped: Record<LbSkipBucket, Array<{ namespace: string; name: string; reason: string }>>;
  /** Harvester's own VM load balancers (workloadType vm): none of this tool's business. */
  notConsidered: number;
}

export type LbClassification =
  | { kind: 'leftover'; loadBalancer: LeftoverLoadBalancer }
  | { kind: 'skip'; bucket: LbSkipBucket; reason: string }
  | { kind: 'not-considered' };

export interface LbClassifyContext {
  /** Guest cluster name -> its VMs, being deleted or not, in every scanned namespace. */
  clusterVms: Map<string, string[]>;
  /** Namespace -> the guest-cluster VMs in it. */
  namespaceVms: Map<string, string[]>;
  now: Date;
  minAgeMs: number;
}

export function lbClassifyContext(vms: readonly VmLike[], now: Date, minAgeMs: number): LbClassifyContext {
  const clusterVms = new Map<string, string[]>();
  const namespaceVms = new Map<string, string[]>();
  for (const vm of vms) {
    const cluster = vm.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME];
    if (cluster === undefined) continue;
    const ref = `${keyTextOf(vm)}${vm.metadata.deletionTimestamp ? ' (being deleted)' : ''}`;
    clusterVms.set(cluster, [...(clusterVms.get(cluster) ?? []), ref]);
    const ns = vm.metadata.namespace ?? '';
    namespaceVms.set(ns, [...(namespaceVms.get(ns) ?? []), ref]);
  }
  return { clusterVms, namespaceVms, now, minAgeMs };
}

/**
 * A load balancer is a leftover when its guest cluster has no VM left anywhere scanned. One
 * whose cluster is unknown (no --cluster-name) is one only when no guest-cluster VM at all
 * is left in its namespace, since the cloud provider makes them in the VMs' namespace.
 */
export function classifyLoadBalancer(lb: LoadBalancer, ctx: LbClassifyContext): LbClassification {
  if (!isGuestClusterLoadBalancer(lb)) return { kind: 'not-considered' };
  const namespace = lb.metadata.namespace ?? '';
  if (lb.metadata.deletionTimestamp)
    return {
      kind: 'skip',
      bucket: 'deleting',
      reason: 'already being deleted (its IP is released when it goes)',
    };
  const label = lbClusterOf(lb);
  const cluster = isAmbiguousClusterName(label) ? null : (label as string);
  const vms = cluster !== null ? ctx.clusterVms.get(cluster) : ctx.namespaceVms.get(namespace);
  if (vms?.length)
    return {
      kind: 'skip',
      bucket: 'liveCluster',
      reason:
        cluster !== null
          ? `guest cluster "${cluster}" still has VMs (${vms.join(', ')})`
          : `made without a cluster name (${LB_LABEL_CLUSTER}=${label ?? '(none)'}), and guest-cluster VMs are left in ${namespace} (${vms.join(', ')}): it may be theirs`,
    };
  const created = Date.parse(lb.metadata.creationTimestamp ?? '');
  const ageMs = Number.isNaN(created) ? Number.POSITIVE_INFINITY : ctx.now.getTime() - created;
  if (ageMs < ctx.minAgeMs) return { kind: 'skip', bucket: 'tooNew', reason: 'younger than --min-age' };
  const service = serviceOf(lb);
  const address = addressOf(lb);
  return {
    kind: 'leftover',
    loadBalancer: {
      namespace,
      name: lb.metadata.name,
      ...(lb.metadata.uid ? { uid: lb.metadata.uid } : {}),
      cluster,
      ...(service ? { service } : {}),
      ...(address ? { address } : {}),
      ...(lb.metadata.creationTimestamp ? { createdAt: lb.metadata.creationTimestamp } : {}),
      ageMs: Number.isFinite(ageMs) ? ageMs : 0,
    },
  };
}

export function findLeftoverLoadBalancers(
  lbs: readonly LoadBalancer[],
  vms: readonly VmLike[],
  options: { now: Date; minAgeMs: number },
): LeftoverLbReport {
  const ctx = lbClassifyContext(vms, options.now, options.minAgeMs);
  const skipped: LeftoverLbReport['skipped'] = { liveCluster: [], tooNew: [], deleting: [] };
  const byCluster = new Map<string | null, LeftoverLoadBalancer[]>();
  let notConsidered = 0;
  const sorted = [...lbs].sort((a, b) => keyTextOf(a).localeCompare(keyTextOf(b)));
  for (const lb of sorted) {
    const c = classifyLoadBalancer(lb, ctx);
    if (c.kind === 'not-considered') notConsidered++;
    else if (c.kind === 'skip')
      skipped[c.bucket].push({
        namespace: lb.metadata.namespace ?? '',
        name: lb.metadata.name,
        reason: c.reason,
      });
    else
      byCluster.set(c.loadBalancer.cluster, [
        ...(byCluster.get(c.loadBalancer.cluster) ?? []),
        c.loadBalancer,
      ]);
  }
  const named = [...byCluster.keys()].filter((k): k is string => k !== null).sort();
  const groups: LeftoverLbReport['groups'] = named.map((cluster) => ({
    cluster,
    loadBalancers: byCluster.get(cluster) ?? [],
  }));
  const unknown = byCluster.get(null);
  if (unknown) groups.push({ cluster: null, loadBalancers: unknown });
  return { groups, skipped, notConsidered };
}

/** What --delete deletes: every listed load balancer, those of no known cluster only when asked. */
export function loadBalancersToDelete(
  report: LeftoverLbReport,
  includeUnknown: boolean,
): LeftoverLoadBalancer[] {
  return report.groups.filter((g) => g.cluster !== null || includeUnknown).flatMap((g) => g.loadBalancers);
}
