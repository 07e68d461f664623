// Pure: the controller reads and writes.
import { ANNOTATION_IMAGE_ID, LABEL_GUEST_CLUSTER_NAME, isValidLabelValue } from './labels.js';
import type { PersistentVolumeClaim } from './types.js';
import { keyText } from '../api/object-key.js';

/** The Harvester CSI driver's name (its --drivername, the guest StorageClass's provisioner). */
export const HARVESTER_CSI_DRIVER = 'driver.harvesterhci.io';

/** On a host PVC whose ownership the controller recorded: the guest PV that names it. */
export const ANNOTATION_GUEST_VOLUME = 'harvester-machine.io/guest-volume';
/** …the guest claim bound to that PV, "namespace/name". */
export const ANNOTATION_GUEST_CLAIM = 'harvester-machine.io/guest-claim';
/** …when and how: "<RFC 3339 time> <watch|last inventory>". */
export const ANNOTATION_OWNERSHIP_RECORDED = 'harvester-machine.io/ownership-recorded';
/** Every guest cluster that ever named the host PVC, sorted, comma-separated (never shrinks). */
export const ANNOTATION_GUEST_CLAIMANTS = 'harvester-machine.io/guest-claimants';
/** What Harvester showed of the claim: "corroborated: …", "not corroborated: …", "contested: …". */
export const ANNOTATION_OWNERSHIP_EVIDENCE = 'harvester-machine.io/ownership-evidence';

/** The most claimants listed; more make the list unreadable, which counts as contested. */
export const MAX_CLAIMANTS = 16;

/**
 * The name the CSI external-provisioner gives a volume it provisions for a guest claim (its
 * default prefix "pvc", then the claim's UID), which the Harvester CSI driver gives the host
 * PVC and the guest's PV.
 */
export const CSI_VOLUME_NAME = /^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type RecordPath = 'watch' | 'last inventory';

/** Kubernetes' rule for object names such as PVCs' (a DNS-1123 subdomain). */
const DNS1123_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
export const isObjectName = (name: string): boolean => name.length <= 253 && DNS1123_SUBDOMAIN.test(name);

/** One volume of the guest, as its PV tells. */
export interface GuestVolume {
  /** The guest PV's name. */
  pv: string;
  /** The host PVC's name (the CSI volume handle). */
  hostPvc: string;
  /** The guest claim bound to it, "namespace/name", when the PV has a valid claimRef. */
  claim?: string;
}

export interface GuestVolumeList {
  volumes: GuestVolume[];
  /** PVs of the Harvester driver whose handle can be no PVC's name: never used. */
  refused: Array<{ pv: string; reason: string }>;
  /** Entries that are no PersistentVolume (no object, no metadata, a name that is no string): dropped. */
  malformed: number;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const ordinal = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface Candidate {
  name: string;
  handle: unknown;
  claimRef: unknown;
}

/** A guest PV of the Harvester driver; undefined for another driver's; "malformed" for no PV. */
function candidate(pv: unknown): Candidate | undefined | 'malformed' {
  if (!isRecord(pv) || !isRecord(pv['metadata'])) return 'malformed';
  const name = pv['metadata']['name'];
  if (typeof name !== 'string') return 'malformed';
  const spec = isRecord(pv['spec']) ? pv['spec'] : {};
  const csi = isRecord(spec['csi']) ? spec['csi'] : {};
  if (csi['driver'] !== HARVESTER_CSI_DRIVER) return undefined;
  return { name, handle: csi['volumeHandle'], claimRef: spec['claimRef'] };
}

/** "namespace/name" of a claimRef whose parts are object names. */
function claimOf(claimRef: unknown): string | undefined {
  const ref = isRecord(claimRef) ? claimRef : {};
  const ns = ref['namespace'];
  const name = ref['name'];
  return typeof ns === 'string' && typeof name === 'string' && isObjectName(ns) && isObjectName(name)
    ? keyText(ns, name)
    : undefined;
}

/**
 * The Harvester CSI volumes among a guest's PVs, each handle once: the PV named as the handle
 * (as a provisioned one is) if any, else the first by name. Whatever the guest answered, this
 * never throws: an entry that is no PersistentVolume is dropped and counted.
 */
export function harvesterVolumes(pvs: readonly unknown[]): GuestVolumeList {
  const refused: GuestVolumeList['refused'] = [];
  let malformed = 0;
  const candidates: Candidate[] = [];
  for (const pv of Array.isArray(pvs) ? (pvs as unknown[]) : []) {
    const c = candidate(pv);
    if (c === 'malformed') malformed++;
    else if (c) candidates.push(c);
  }
  candidates.sort((a, b) => ordinal(a.name, b.name));
  const chosen = new Map<string, { name: string; claimRef: unknown }>();
  for (const c of candidates) {
    const shown = isObjectName(c.name) ? c.name : '(a PV whose name is no object name)';
    const handle = typeof c.handle === 'string' ? c.handle : '';
    if (!isObjectName(handle)) {
      refused.push({ pv: shown, reason: 'its volumeHandle can be no PVC name (not a DNS-1123 subdomain)' });
      continue;
    }
    const known = chosen.get(handle);
    if (!known || (c.name === handle && known.name !== handle))
      chosen.set(handle, { name: shown, claimRef: c.claimRef });
  }
  const volumes: GuestVolume[] = [];
  for (const [hostPvc, c] of chosen) {
    const claim = claimOf(c.claimRef);
    volumes.push({ pv: c.name, hostPvc, ...(claim ? { claim } : {}) });
  }
  volumes.sort((a, b) => ordinal(a.pv, b.pv) || ordinal(a.hostPvc, b.hostPvc));
  return { volumes, refused, malformed };
}

/** The guest clusters a host PVC lists as having named it; unreadable when not what we write. */
export function readClaimants(pvc: { metadata: { annotations?: Record<string, string> } }): {
  names: string[];
  readable: boolean;
} {
  const raw: unknown = pvc.metadata.annotations?.[ANNOTATION_GUEST_CLAIMANTS];
  if (raw === undefined) return { names: [], readable: true };
  if (typeof raw !== 'string' || raw.length > MAX_CLAIMANTS * 64) return { names: [], readable: false };
  const parts = raw.split(',');
  const names = parts.filter((n) => n !== '' && isValidLabelValue(n));
  return {
    names: [...new Set(names)].sort(ordinal),
    readable: parts.length <= MAX_CLAIMANTS && names.length === parts.length,
  };
}

/** Ownership as Harvester shows it: what the controller concluded of a guest's claim on a host PVC. */
export type OwnershipOutcome = 'corroborated' | 'not corroborated' | 'contested';

export type OwnershipDecision =
  /** Write these labels (null: remove) and annotations (a merge patch with the resourceVersion read). */
  | {
      action: 'write';
      outcome: OwnershipOutcome;
      reason: string;
      labels: Record<string, string | null>;
      annotations: Record<string, string>;
    }
  /** Harvester already shows this outcome: nothing to write. */
  | { action: 'recorded'; outcome: OwnershipOutcome; reason: string }
  /** No PVC of that name in the cluster's VM namespace (the PV outlived it, or another namespace). */
  | { action: 'missing' }
  /** A PVC that is no CSI volume (a VM disk, an owned one): never written to. */
  | { action: 'refused'; reason: string };

export interface OwnershipInput {
  cluster: string;
  volume: GuestVolume;
  pvc: PersistentVolumeClaim | undefined;
  /**
   * When the guest cluster was made: the earliest creationTimestamp of its Rancher objects
   * (written by Rancher's apiserver, not the tenant); undefined when unknown.
   */
  clusterCreated: string | undefined;
  now: Date;
  path: RecordPath;
}

/**
 * Why Harvester does not corroborate that the guest's PV names a volume the CSI driver
 * provisioned for this cluster; undefined when it does. Only the volume's name and the guest
 * PV's name come from the guest; each must match what Harvester shows.
 *
 * Which host volumes a guest cluster owns. The guest says which: each of its PersistentVolumes
 * of the Harvester CSI driver names, in `spec.csi.volumeHandle`, a host PVC in the cluster's VM
 * namespace (docs/upstream/harvester-kubevirt.md#guest-cluster-volumes). But the guest's
 * apiserver is written by the guest's admins (tenants): what it says is a claim, not a proof.
 * A claim is corroborated only by what Harvester itself shows of the host PVC: the shape the CSI driver gives a volume it provisions
 * (named `pvc-<guest claim UID>`, as the guest's PV is; ReadWriteMany; no owner, no image, no
 * source but a guest snapshot), made after the guest cluster existed, and named by no other
 * cluster, ever. Every cluster that ever named a host PVC is listed on it
 * (`harvester-machine.io/guest-claimants`), so two claimants are seen across restarts.
 */
export function corroborationProblem(
  volume: GuestVolume,
  pvc: PersistentVolumeClaim,
  clusterCreated: string | undefined,
): string | undefined {
  const name = volume.hostPvc;
  if (!CSI_VOLUME_NAME.test(name))
    return `its name is not one the Harvester CSI driver gives a volume it provisions (pvc-<guest claim UID>): made on Harvester, or bound statically`;
  if (volume.pv !== name)
    return `the guest's PersistentVolume ${volume.pv} is not named as the volume, as a provisioned one is: bound statically`;
  const modes = pvc.spec?.accessModes;
  if (!Array.isArray(modes) || modes.length !== 1 || modes[0] !== 'ReadWriteMany')
    return 'its access modes are not the ReadWriteMany the Harvester CSI driver asks for';
  for (const field of ['dataSource', 'dataSourceRef'] as const) {
    const source: unknown = pvc.spec?.[field];
    if (source === undefined || source === null) continue;
    if (!isRecord(source) || source['kind'] !== 'VolumeSnapshot')
      return `it was made from another volume (spec.${field}), not provisioned empty or from a guest snapshot`;
  }
  const created = Date.parse(pvc.metadata.creationTimestamp ?? '');
  if (Number.isNaN(created)) return 'Harvester shows no creation time for it';
  const born = Date.parse(clusterCreated ?? '');
  if (Number.isNaN(born)) return "the guest cluster's creation time is unknown";
  if (created <= born)
    return `it was made at ${new Date(created).toISOString()}, before the guest cluster (made at ${new Date(born).toISOString()}): not provisioned for it`;
  return undefined;
}

/** Why a PVC is never written to (a VM disk, an owned PVC); undefined when it may be. */
function refusal(pvc: PersistentVolumeClaim): string | undefined {
  const image = pvc.metadata.annotations?.[ANNOTATION_IMAGE_ID];
  if (image) return `it is a VM disk made from image ${image}`;
  const owner = pvc.metadata.ownerReferences?.[0];
  if (owner) return `it is owned by ${owner.kind || 'another object'}`;
  return undefined;
}

/** The claimants after this cluster's claim: those listed, the labelled owner, this cluster. */
function claimantsAfter(
  pvc: PersistentVolumeClaim,
  cluster: string,
): { claimants: string[]; readable: boolean } {
  const before = readClaimants(pvc);
  const label = pvc.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME];
  const claimants = [...before.names];
  for (const name of [cluster, ...(label !== undefined && label !== cluster ? [label] : [])])
    if (!claimants.includes(name) && claimants.length < MAX_CLAIMANTS) claimants.push(name);
  return { claimants: claimants.sort(ordinal), readable: before.readable };
}

interface Wanted {
  outcome: OwnershipOutcome;
  reason: string;
  labels: Record<string, string | null>;
  annotations: Record<string, string>;
}

/** What Harvester should show of this claim, and why. */
function wanted(input: OwnershipInput, pvc: PersistentVolumeClaim): Wanted {
  const { cluster, volume } = input;
  const label = pvc.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME];
  // Our label (the record's annotations beside it) is ours to take back; another's is left.
  const ours = pvc.metadata.annotations?.[ANNOTATION_OWNERSHIP_RECORDED] !== undefined;
  const takeBack: Wanted['labels'] = label !== undefined && ours ? { [LABEL_GUEST_CLUSTER_NAME]: null } : {};
  const { claimants, readable } = claimantsAfter(pvc, cluster);
  const listed: Record<string, string> = readable
    ? { [ANNOTATION_GUEST_CLAIMANTS]: claimants.join(',') }
    : {};
  const shown = (
    outcome: OwnershipOutcome,
    reason: string,
    labels: Wanted['labels'],
    record: Record<string, string> = {},
  ): Wanted => ({
    outcome,
    reason,
    labels,
    annotations: { ...listed, ...record, [ANNOTATION_OWNERSHIP_EVIDENCE]: `${outcome}: ${reason}` },
  });
  if (!readable)
    return shown(
      'contested',
      `its ${ANNOTATION_GUEST_CLAIMANTS} annotation is not one the controller writes`,
      takeBack,
    );
  if (claimants.length > 1)
    return shown('contested', `named by guest clusters ${claimants.join(', ')}`, takeBack);
  const problem = corroborationProblem(volume, pvc, input.clusterCreated);
  if (problem !== undefined)
    return shown(
      'not corroborated',
      `guest cluster ${cluster}'s PersistentVolume ${volume.pv} names it, but ${problem}`,
      takeBack,
    );
  const reason = `named as the Harvester CSI driver names a volume it provisions, as the guest's PersistentVolume is; made at ${pvc.metadata.creationTimestamp ?? ''}, after guest cluster ${cluster} (made at ${input.clusterCreated ?? ''}); no other cluster named it`;
  if (label === cluster) return shown('corroborated', reason, {});
  return shown(
    'corroborated',
    reason,
    { [LABEL_GUEST_CLUSTER_NAME]: cluster },
    {
      [ANNOTATION_GUEST_VOLUME]: volume.pv,
      ...(volume.claim ? { [ANNOTATION_GUEST_CLAIM]: volume.claim } : {}),
      [ANNOTATION_OWNERSHIP_RECORDED]: `${input.now.toISOString()} ${input.path}`,
    },
  );
}

/**
 * What to write on the host PVC a guest's PV names: every claimant listed, the evidence, and the
 * label only for a corroborated claim (ours taken back from one that is not, or is contested).
 */
export function decideOwnership(input: OwnershipInput): OwnershipDecision {
  const { cluster, pvc } = input;
  if (!isValidLabelValue(cluster) || cluster === '')
    return { action: 'refused', reason: `guest cluster name "${cluster}" can be no label value` };
  if (!pvc) return { action: 'missing' };
  const refused = refusal(pvc);
  if (refused !== undefined) return { action: 'refused', reason: refused };
  const want = wanted(input, pvc);
  const labels = pvc.metadata.labels ?? {};
  const annotations = pvc.metadata.annotations ?? {};
  const changed =
    Object.entries(want.labels).some(([k, v]) => (v === null ? k in labels : labels[k] !== v)) ||
    Object.entries(want.annotations).some(([k, v]) => annotations[k] !== v);
  if (!changed) return { action: 'recorded', outcome: want.outcome, reason: want.reason };
  return { action: 'write', ...want };
}

const EVIDENCE_SHOWN = /^(corroborated|not corroborated|contested): [\x20-\x7e]{1,900}$/;

/**
 * Why a host PVC must not be deleted automatically, as Harvester shows its ownership; undefined
 * when nothing bars it. `cluster`: the cluster it would be deleted with, when there is one.
 * Barred: two claimants ever (or a claimant list we cannot read), a claim the controller did
 * not corroborate, and a record an earlier controller made on the guest's word alone.
 *
 * Only a corroborated volume gets the label the driver's whole-cluster removal selects on
 * (`guestcluster.harvesterhci.io/name=<ClusterName>`, removal-plan.ts; the Go driver's too);
 * one claimed but not corroborated, or contested, is never deleted automatically: the
 * controller's cleanup, the removal plan and `leftovers` keep it and say why.
 */
export function ownershipBar(
  pvc: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } },
  cluster?: string,
): string | undefined {
  const a = pvc.metadata.annotations ?? {};
  const byHand = 'never deleted automatically: delete it by hand once you know whose it is';
  const claimants = readClaimants(pvc);
  if (!claimants.readable)
    return `its ${ANNOTATION_GUEST_CLAIMANTS} annotation is not one the controller writes, so which guest clusters named it is unknown; ${byHand}`;
  const owners = new Set(claimants.names);
  if (cluster !== undefined && cluster !== '') owners.add(cluster);
  if (owners.size > 1)
    return `named by guest clusters ${[...owners].sort(ordinal).join(', ')}: ownership contested; ${byHand}`;
  const evidence: unknown = a[ANNOTATION_OWNERSHIP_EVIDENCE];
  if (evidence !== undefined) {
    if (typeof evidence !== 'string' || !EVIDENCE_SHOWN.test(evidence))
      return `its ${ANNOTATION_OWNERSHIP_EVIDENCE} annotation is not one the controller writes; ${byHand}`;
    if (!evidence.startsWith('corroborated: ')) return `ownership ${evidence}; ${byHand}`;
    return undefined;
  }
  if (a[ANNOTATION_OWNERSHIP_RECORDED] !== undefined || a[ANNOTATION_GUEST_VOLUME] !== undefined)
    return `recorded by an earlier controller on the guest's word alone, with no evidence from Harvester; ${byHand} (the controller records it again while its cluster lives)`;
  return undefined;
}

/**
 * What a recorded PVC says of its guest volume, for `rm --dry-run` and the status: "" when
 * nothing. Anyone who may edit PVCs on Harvester can write these annotations: a value that is
 * not what the controller writes (an object name, "namespace/name", "<time> <path>") is not shown.
 */
export function describeRecord(pvc: { metadata: { annotations?: Record<string, string> } }): string {
  const a = pvc.metadata.annotations ?? {};
  const pv = a[ANNOTATION_GUEST_VOLUME];
  if (!pv || typeof pv !== 'string' || !isObjectName(pv)) return '';
  const claim = a[ANNOTATION_GUEST_CLAIM];
  const claimShown =
    typeof claim === 'string' && claim.split('/').length === 2 && claim.split('/').every(isObjectName)
      ? claim
      : undefined;
  const recorded = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) (watch|last inventory)$/.exec(
    a[ANNOTATION_OWNERSHIP_RECORDED] ?? '',
  );
  return `the guest's PersistentVolume ${pv}${claimShown ? ` (claim ${claimShown})` : ''} names it; recorded by harvester-machine-controller${recorded ? ` at ${recorded[1]} by its ${recorded[2]}` : ''}`;
}
