// Which host volumes belong to no VM any more (harvester#7765: volumes of deleted guest
// clusters, left behind when they were not attached at deletion time), and to which
// guest cluster each one belonged, as far as anything on Harvester still tells. Pure:
// the caller lists the objects (cli/volumes/cluster-scan.ts) and deletes (with a re-check through
// the same classify()).
import {
  ANNOTATION_IMAGE_ID,
  ANNOTATION_REMOVED_PVCS,
  ANNOTATION_VOLUME_CLAIM_TEMPLATES,
  LABEL_GUEST_CLUSTER_NAME,
} from './labels.js';
import { ANNOTATION_GUEST_CLAIMANTS, ANNOTATION_OWNERSHIP_EVIDENCE, ownershipBar } from './guest-volumes.js';
import { referencedClaims } from './removal-plan.js';
import type { ObjectMeta, PersistentVolumeClaim, VirtualMachine, VirtualMachineInstance } from './types.js';
import { keyText } from '../api/object-key.js';

export type HostPvc = Omit<PersistentVolumeClaim, 'status'> & {
  status?: { phase?: string; capacity?: Record<string, string> };
};

export interface PodLike {
  metadata: Partial<ObjectMeta>;
  spec?: { volumes?: Array<{ persistentVolumeClaim?: { claimName?: string } }> };
}

export interface EventLike {
  metadata: Partial<ObjectMeta>;
  involvedObject?: { kind?: string; name?: string; namespace?: string };
  reason?: string;
  message?: string;
  lastTimestamp?: string;
  eventTime?: string;
}

export interface ClusterScan {
  pvcs: readonly HostPvc[];
  vms: readonly VirtualMachine[];
  vmis: readonly VirtualMachineInstance[];
  /** undefined when pods could not be listed (no permission): then only VMs and VMIs protect. */
  pods?: readonly PodLike[];
  events: readonly EventLike[];
}

export interface OrphanVolume {
  namespace: string;
  name: string;
  uid?: string;
  /** status.capacity.storage, else the requested size. */
  size: string;
  createdAt?: string;
  ageMs: number;
  /** What kind of volume it looks like: "guest-cluster volume (pvc-<uid>)", "VM disk from image ...". */
  kind: string;
  /** The guest cluster it belonged to; undefined when nothing tells. */
  cluster?: string;
  /** How the cluster is known. */
  clusterSource?: string;
  /** What Harvester still remembers of it (annotations of VMs, events). */
  history: string[];
}

export type SkipBucket = 'inUse' | 'liveCluster' | 'tooNew' | 'deleting' | 'owned' | 'claimed';

export interface SkippedVolume {
  namespace: string;
  name: string;
  reason: string;
}

export interface OrphanGroup {
  /** null: the cluster is unknown. */
  cluster: string | null;
  volumes: OrphanVolume[];
}

export interface OrphanReport {
  groups: OrphanGroup[];
  skipped: Record<SkipBucket, SkippedVolume[]>;
  /** PVCs that are not VM or guest-cluster volumes (left alone, not listed). */
  notConsidered: number;
  /** Guest clusters that still have VMs in the scanned namespaces. */
  liveClusters: string[];
  podsChecked: boolean;
}

export type Classification =
  | { kind: 'orphan'; volume: OrphanVolume }
  | { kind: 'skip'; bucket: SkipBucket; reason: string }
  | { kind: 'not-considered' };

const CSI_VOLUME = /^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The Go driver's (and ours) boot/data disk names: <vm>-disk-<i>-<5 random characters>. */
const DRIVER_DISK = /-disk-\d+-[a-z0-9]{5}$/;

const key = (namespace: string | undefined, name: string | undefined): string => keyText(namespace, name);
const vmRef = (m: Partial<ObjectMeta>): string => key(m.namespace, m.name);

function splitNames(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function templateClaims(vm: VirtualMachine): string[] {
  const raw = vm.metadata.annotations?.[ANNOTATION_VOLUME_CLAIM_TEMPLATES];
  if (!raw) return [];
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed.flatMap((t: { metadata?: { name?: unknown } }) =>
      typeof t?.metadata?.name === 'string' ? [t.metadata.name] : [],
    );
  } catch {
    return [];
  }
}

/** Everything that uses a PVC, by "namespace/claim". */
export function usageIndex(scan: Pick<ClusterScan, 'vms' | 'vmis' | 'pods'>): Map<string, string[]> {
  const index = new Map<string, string[]>();
  const add = (namespace: string | undefined, claim: string, user: string): void => {
    const k = key(namespace, claim);
    const users = index.get(k) ?? [];
    if (!users.includes(user)) users.push(user);
    index.set(k, users);
  };
  for (const vm of scan.vms) {
    const ns = vm.metadata.namespace;
    const who = `VM ${vmRef(vm.metadata)}${vm.metadata.deletionTimestamp ? ' (being deleted)' : ''}`;
    for (const claim of referencedClaims(vm.spec.template.spec.volumes)) add(ns, claim, who);
    for (const claim of templateClaims(vm)) add(ns, claim, `${who}, volume claim template`);
  }
  for (const vmi of scan.vmis) {
    const ns = vmi.metadata.namespace;
    const who = `VM instance ${vmRef(vmi.metadata)}`;
    for (const claim of referencedClaims(vmi.spec?.volumes)) add(ns, claim, who);
    for (const status of vmi.status?.volumeStatus ?? []) {
      const claim = status.persistentVolumeClaimInfo?.claimName;
      if (claim) add(ns, claim, `${who}, volume status ${status.name}`);
    }
  }
  for (const pod of scan.pods ?? []) {
    for (const v of pod.spec?.volumes ?? []) {
      const claim = v.persistentVolumeClaim?.claimName;
      if (claim) add(pod.metadata.namespace, claim, `pod ${vmRef(pod.metadata)}`);
    }
  }
  return index;
}

/** Guest clusters with VMs that are not being deleted, and those VMs. */
export function liveClusterVms(vms: readonly VirtualMachine[]): Map<string, string[]> {
  const live = new Map<string, string[]>();
  for (const vm of vms) {
    const cluster = vm.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME];
    if (!cluster || vm.metadata.deletionTimestamp) continue;
    live.set(cluster, [...(live.get(cluster) ?? []), vmRef(vm.metadata)]);
  }
  return live;
}

function removedBy(vms: readonly VirtualMachine[], pvc: HostPvc): VirtualMachine[] {
  return vms.filter(
    (vm) =>
      vm.metadata.namespace === pvc.metadata.namespace &&
      splitNames(vm.metadata.annotations?.[ANNOTATION_REMOVED_PVCS]).includes(pvc.metadata.name),
  );
}

function volumeKind(pvc: HostPvc, recordedByVm: boolean): string | undefined {
  const { name, labels, annotations } = pvc.metadata;
  if (labels?.[LABEL_GUEST_CLUSTER_NAME] !== undefined) return 'guest-cluster volume (labelled)';
  if (annotations?.[ANNOTATION_GUEST_CLAIMANTS] !== undefined || annotations?.[ANNOTATION_OWNERSHIP_EVIDENCE])
    return 'volume a guest cluster named';
  if (CSI_VOLUME.test(name)) return 'guest-cluster volume (pvc-<uid> of the Harvester CSI driver)';
  if (annotations?.[ANNOTATION_IMAGE_ID]) return `VM disk from image ${annotations[ANNOTATION_IMAGE_ID]}`;
  if (DRIVER_DISK.test(name)) return 'VM disk (<vm>-disk-<i>-<suffix>)';
  if (recordedByVm) return 'VM volume';
  return undefined;
}

const eventTime = (e: EventLike): string =>
  e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? '';

/** Events that name the volume: on the PVC itself, or on a VM/VMI whose message mentions it. */
function eventsAbout(pvc: HostPvc, events: readonly EventLike[]): EventLike[] {
  const name = pvc.metadata.name;
  const mentions = new RegExp(`(^|[^a-z0-9-])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^a-z0-9-])`);
  return events
    .filter((e) => (e.involvedObject?.namespace ?? e.metadata.namespace) === pvc.metadata.namespace)
    .filter(
      (e) =>
        (e.involvedObject?.kind === 'PersistentVolumeClaim' && e.involvedObject.name === name) ||
        ((e.involvedObject?.kind === 'VirtualMachine' ||
          e.involvedObject?.kind === 'VirtualMachineInstance') &&
          mentions.test(e.message ?? '')),
    )
    .sort((a, b) => eventTime(a).localeCompare(eventTime(b)));
}

/** The guest cluster a volume belonged to, and the history that says so. */
function attribute(
  pvc: HostPvc,
  scan: ClusterScan,
): { cluster?: string; clusterSource?: string; history: string[] } {
  const history: string[] = [];
  let cluster: string | undefined;
  let clusterSource: string | undefined;
  const claim = (value: string | undefined, source: string): void => {
    if (cluster === undefined && value) {
      cluster = value;
      clusterSource = source;
    }
  };
  claim(pvc.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME], `label ${LABEL_GUEST_CLUSTER_NAME}`);
  for (const vm of removedBy(scan.vms, pvc)) {
    const state = vm.metadata.deletionTimestamp ? 'being deleted' : 'to be deleted';
    history.push(`VM ${vmRef(vm.metadata)} (${state}) lists it in ${ANNOTATION_REMOVED_PVCS}`);
    claim(vm.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME], `VM ${vmRef(vm.metadata)} that is removing it`);
  }
  for (const e of eventsAbout(pvc, scan.events)) {
    const on = `${e.involvedObject?.kind ?? 'object'} ${e.involvedObject?.name ?? ''}`;
    history.push(
      `event ${e.reason ?? ''} on ${on} at ${eventTime(e) || 'unknown time'}: ${(e.message ?? '').slice(0, 160)}`,
    );
    if (e.involvedObject?.kind === 'VirtualMachine' || e.involvedObject?.kind === 'VirtualMachineInstance') {
      const vm = scan.vms.find(
        (v) => v.metadata.namespace === pvc.metadata.namespace && v.metadata.name === e.involvedObject?.name,
      );
      claim(
        vm?.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME],
        `event ${e.reason ?? ''} on VM ${vmRef(vm?.metadata ?? {})}`,
      );
    }
  }
  return { ...(cluster !== undefined ? { cluster, clusterSource } : {}), history };
}

export interface ClassifyContext {
  scan: ClusterScan;
  usage: Map<string, string[]>;
  live: Map<string, string[]>;
  now: Date;
  minAgeMs: number;
}

export function classifyContext(scan: ClusterScan, now: Date, minAgeMs: number): ClassifyContext {
  return { scan, usage: usageIndex(scan), live: liveClusterVms(scan.vms), now, minAgeMs };
}

/** Kept whoever it belonged to: in use, being deleted, owned, or of uncertain ownership. */
function keptAsIs(pvc: HostPvc, ctx: ClassifyContext): Classification | undefined {
  const users = ctx.usage.get(key(pvc.metadata.namespace, pvc.metadata.name));
  if (users?.length) return { kind: 'skip', bucket: 'inUse', reason: `used by ${users.join('; ')}` };
  if (pvc.metadata.deletionTimestamp)
    return { kind: 'skip', bucket: 'deleting', reason: 'already being deleted' };
  const owner = pvc.metadata.ownerReferences?.[0];
  if (owner) {
    return {
      kind: 'skip',
      bucket: 'owned',
      reason: `owned by ${owner.kind} ${owner.name}: deleted with its owner`,
    };
  }
  const bar = ownershipBar(pvc, pvc.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME]);
  return bar !== undefined ? { kind: 'skip', bucket: 'claimed', reason: bar } : undefined;
}

/**
 * A PVC is never an orphan while anything uses it: a VM (being deleted or not) through
 * its volumes or its volumeClaimTemplates, a VMI through its volumes or volumeStatus (a
 * hot-plug in progress), or a pod. Nor while its guest cluster (known from its label or
 * history) still has VMs: a workload volume is detached whenever its pod is not running.
 * Only volumes that look like VM or guest-cluster volumes are considered at all: other
 * PVCs on Harvester (monitoring, add-ons) are none of this tool's business. One whose ownership
 * is contested or not corroborated (guest-volumes.ts ownershipBar) is listed as kept,
 * with why, and never deleted by this tool: an operator who knows whose it is deletes it by hand.
 */
export function classify(pvc: HostPvc, ctx: ClassifyContext): Classification {
  const { namespace, name } = pvc.metadata;
  const recorded = removedBy(ctx.scan.vms, pvc).length > 0;
  const kind = volumeKind(pvc, recorded);
  if (!kind) return { kind: 'not-considered' };
  const skip = keptAsIs(pvc, ctx);
  if (skip) return skip;
  const { cluster, clusterSource, history } = attribute(pvc, ctx.scan);
  const liveVms = cluster !== undefined ? ctx.live.get(cluster) : undefined;
  if (liveVms) {
    return {
      kind: 'skip',
      bucket: 'liveCluster',
      reason: `guest cluster "${cluster}" still has VMs (${liveVms.join(', ')}): a workload volume is detached while its pod is not running`,
    };
  }
  const created = Date.parse(pvc.metadata.creationTimestamp ?? '');
  const ageMs = Number.isNaN(created) ? Number.POSITIVE_INFINITY : ctx.now.getTime() - created;
  if (ageMs < ctx.minAgeMs) {
    return {
      kind: 'skip',
      bucket: 'tooNew',
      reason: 'younger than --min-age: a new CSI volume is attached a moment after it is made',
    };
  }
  const size = pvc.status?.capacity?.['storage'] ?? pvc.spec?.resources?.requests?.['storage'] ?? '?';
  return {
    kind: 'orphan',
    volume: {
      namespace: namespace ?? '',
      name,
      ...(pvc.metadata.uid ? { uid: pvc.metadata.uid } : {}),
      size,
      ...(pvc.metadata.creationTimestamp ? { createdAt: pvc.metadata.creationTimestamp } : {}),
      ageMs: Number.isFinite(ageMs) ? ageMs : 0,
      kind,
      ...(cluster !== undefined ? { cluster, clusterSource } : {}),
      history,
    },
  };
}

export function findOrphans(scan: ClusterScan, options: { now: Date; minAgeMs: number }): OrphanReport {
  const ctx = classifyContext(scan, options.now, options.minAgeMs);
  const skipped: Record<SkipBucket, SkippedVolume[]> = {
    inUse: [],
    liveCluster: [],
    tooNew: [],
    deleting: [],
    owned: [],
    claimed: [],
  };
  const byCluster = new Map<string | null, OrphanVolume[]>();
  let notConsidered = 0;
  const pvcs = [...scan.pvcs].sort((a, b) =>
    key(a.metadata.namespace, a.metadata.name).localeCompare(key(b.metadata.namespace, b.metadata.name)),
  );
  for (const pvc of pvcs) {
    const c = classify(pvc, ctx);
    if (c.kind === 'not-considered') notConsidered++;
    else if (c.kind === 'skip')
      skipped[c.bucket].push({
        namespace: pvc.metadata.namespace ?? '',
        name: pvc.metadata.name,
        reason: c.reason,
      });
    else {
      const group = c.volume.cluster ?? null;
      byCluster.set(group, [...(byCluster.get(group) ?? []), c.volume]);
    }
  }
  const clusters = [...byCluster.keys()].filter((c): c is string => c !== null).sort();
  const groups: OrphanGroup[] = clusters.map((cluster) => ({
    cluster,
    volumes: byCluster.get(cluster) ?? [],
  }));
  const unknown = byCluster.get(null);
  if (unknown) groups.push({ cluster: null, volumes: unknown });
  return {
    groups,
    skipped,
    notConsidered,
    liveClusters: [...ctx.live.keys()].sort(),
    podsChecked: scan.pods !== undefined,
  };
}

/** What --delete deletes: every listed volume, those of an unknown cluster only when asked. */
export function volumesToDelete(report: OrphanReport, includeUnknown: boolean): OrphanVolume[] {
  return report.groups.filter((g) => g.cluster !== null || includeUnknown).flatMap((g) => g.volumes);
}
