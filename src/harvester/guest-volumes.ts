// Which host volumes a guest cluster owns, as the guest itself says: each of its
// PersistentVolumes of the Harvester CSI driver names, in `spec.csi.volumeHandle`, the host
// PVC the driver made for it in the namespace of the driver's kubeconfig (the cluster's VMs'
// namespace) (docs/upstream/harvester-kubevirt.md#guest-cluster-volumes). The released CSI
// driver labels nothing, so the cleanup controller records that ownership on the host PVC
// while the guest cluster lives: the label the driver's whole-cluster removal selects on
// (`guestcluster.harvesterhci.io/name=<ClusterName>`, removal-plan.ts), and annotations saying
// which guest volume and claim named it, and when. Pure: the controller reads and writes.
//
// The guest's apiserver is someone else's input (the guest cluster's admin writes its PVs):
// a handle is used only when it can be a PVC's name, only in the cluster's own VM
// namespaces, and a PVC already labelled for another cluster is never relabelled (first
// record wins; the deletion path also keeps every PVC a live cluster's PV names).
import type { PersistentVolume } from '../api/core.js';
import { ANNOTATION_IMAGE_ID, LABEL_GUEST_CLUSTER_NAME, isValidLabelValue } from './labels.js';
import type { PersistentVolumeClaim } from './types.js';

/** The Harvester CSI driver's name (its --drivername, the guest StorageClass's provisioner). */
export const HARVESTER_CSI_DRIVER = 'driver.harvesterhci.io';

/** On a host PVC whose ownership the controller recorded: the guest PV that names it. */
export const ANNOTATION_GUEST_VOLUME = 'harvester-machine.io/guest-volume';
/** …the guest claim bound to that PV, "namespace/name". */
export const ANNOTATION_GUEST_CLAIM = 'harvester-machine.io/guest-claim';
/** …when and how: "<RFC 3339 time> <watch|last inventory>". */
export const ANNOTATION_OWNERSHIP_RECORDED = 'harvester-machine.io/ownership-recorded';

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
}

/** The Harvester CSI volumes among a guest's PVs, each handle once (the first PV naming it). */
export function harvesterVolumes(pvs: readonly PersistentVolume[]): GuestVolumeList {
  const volumes: GuestVolume[] = [];
  const refused: GuestVolumeList['refused'] = [];
  const seen = new Set<string>();
  const sorted = [...pvs].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  for (const pv of sorted) {
    const csi = pv.spec?.csi;
    if (csi?.driver !== HARVESTER_CSI_DRIVER) continue;
    const shown = isObjectName(pv.metadata.name) ? pv.metadata.name : '(a PV whose name is no object name)';
    const handle = typeof csi.volumeHandle === 'string' ? csi.volumeHandle : '';
    if (!isObjectName(handle)) {
      refused.push({ pv: shown, reason: 'its volumeHandle can be no PVC name (not a DNS-1123 subdomain)' });
      continue;
    }
    if (seen.has(handle)) continue;
    seen.add(handle);
    const ref = pv.spec.claimRef;
    const claim =
      ref?.namespace && ref.name && isObjectName(ref.namespace) && isObjectName(ref.name)
        ? `${ref.namespace}/${ref.name}`
        : undefined;
    volumes.push({ pv: shown, hostPvc: handle, ...(claim ? { claim } : {}) });
  }
  return { volumes, refused };
}

export type OwnershipDecision =
  /** Label and annotate it (a merge patch with the resourceVersion read). */
  | { action: 'label'; labels: Record<string, string>; annotations: Record<string, string> }
  /** Already labelled for this cluster: nothing to write. */
  | { action: 'recorded' }
  /** Labelled for another guest cluster: left alone, reported. */
  | { action: 'other-cluster'; owner: string }
  /** No PVC of that name in the cluster's VM namespace (the PV outlived it, or another namespace). */
  | { action: 'missing' }
  /** A PVC that is no CSI volume: never labelled. */
  | { action: 'refused'; reason: string };

export function decideOwnership(input: {
  cluster: string;
  volume: GuestVolume;
  pvc: PersistentVolumeClaim | undefined;
  now: Date;
  path: RecordPath;
}): OwnershipDecision {
  const { cluster, volume, pvc } = input;
  if (!isValidLabelValue(cluster) || cluster === '')
    return { action: 'refused', reason: `guest cluster name "${cluster}" can be no label value` };
  if (!pvc) return { action: 'missing' };
  const owner = pvc.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME];
  if (owner === cluster) return { action: 'recorded' };
  if (owner !== undefined) return { action: 'other-cluster', owner };
  if (pvc.metadata.annotations?.[ANNOTATION_IMAGE_ID])
    return {
      action: 'refused',
      reason: `it is a VM disk made from image ${pvc.metadata.annotations[ANNOTATION_IMAGE_ID]}`,
    };
  if ((pvc.metadata.ownerReferences ?? []).length > 0)
    return {
      action: 'refused',
      reason: `it is owned by ${pvc.metadata.ownerReferences?.[0]?.kind ?? 'another object'}`,
    };
  return {
    action: 'label',
    labels: { [LABEL_GUEST_CLUSTER_NAME]: cluster },
    annotations: {
      [ANNOTATION_GUEST_VOLUME]: volume.pv,
      ...(volume.claim ? { [ANNOTATION_GUEST_CLAIM]: volume.claim } : {}),
      [ANNOTATION_OWNERSHIP_RECORDED]: `${input.now.toISOString()} ${input.path}`,
    },
  };
}

/**
 * What a recorded PVC says of its guest volume, for `rm --dry-run` and the status: "" when
 * nothing. Anyone who may edit PVCs on Harvester can write these annotations: a value that is
 * not what the controller writes (an object name, "namespace/name", "<time> <path>") is not shown.
 */
export function describeRecord(pvc: { metadata: { annotations?: Record<string, string> } }): string {
  const a = pvc.metadata.annotations ?? {};
  const pv = a[ANNOTATION_GUEST_VOLUME];
  if (!pv || !isObjectName(pv)) return '';
  const claim = a[ANNOTATION_GUEST_CLAIM];
  const claimShown =
    claim?.split('/').length === 2 && claim.split('/').every(isObjectName) ? claim : undefined;
  const recorded = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) (watch|last inventory)$/.exec(
    a[ANNOTATION_OWNERSHIP_RECORDED] ?? '',
  );
  return `the guest's PersistentVolume ${pv}${claimShown ? ` (claim ${claimShown})` : ''} names it; recorded by harvester-machine-controller${recorded ? ` at ${recorded[1]} by its ${recorded[2]}` : ''}`;
}
