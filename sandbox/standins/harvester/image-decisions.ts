// The image stand-in's pure decisions: which StorageClass an image gets, what that class
// holds, which step an image is at, and the status each step writes.
import type { StorageClass, VirtualMachineImage } from '../types.js';
import { LONGHORN_PROVISIONER, Labels } from '../names.js';
import { conditionIs, setCondition } from './conditions.js';

/** What Longhorn would report for a small cloud image (bytes). */
export const IMPORTED_IMAGE_SIZE = 629_145_600;
export const IMPORTED_IMAGE_VIRTUAL_SIZE = 2_361_393_152;

/** Harvester's mutating webhook fills these in when the image spec has none. */
const DEFAULT_SC_PARAMETERS = { numberOfReplicas: '3', staleReplicaTimeout: '30', migratable: 'true' };

/** The legacy StorageClass name of an image (`longhorn-<image name>`), used when such a class exists. */
export function legacyStorageClassName(image: VirtualMachineImage): string {
  return `longhorn-${image.metadata.name}`;
}

/**
 * The StorageClass an image's volumes use: the CDI backend's target class; else the legacy
 * class when it exists, or `lh-<image UID>`.
 */
export function storageClassNameFor(image: VirtualMachineImage, legacyExists: boolean): string {
  if (image.spec.backend === 'cdi') return image.spec.targetStorageClassName ?? '';
  return legacyExists ? legacyStorageClassName(image) : `lh-${image.metadata.uid ?? ''}`;
}

/** The StorageClass Harvester makes for a backing-image image: Longhorn's, naming the image's backing image. */
export function storageClassOf(image: VirtualMachineImage, name: string): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: LONGHORN_PROVISIONER,
    reclaimPolicy: 'Delete',
    allowVolumeExpansion: true,
    volumeBindingMode: 'Immediate',
    parameters: {
      backingImage: `vmi-${image.metadata.uid ?? ''}`,
      ...(image.spec.storageClassParameters ?? DEFAULT_SC_PARAMETERS),
    },
  };
}

/** The step a live image (finalizer in place) is at. */
export type ImageStep = 'failed' | 'label' | 'initialize' | 'import';

/** The pure decision: given up after too many retries, imported (keep its label), not initialized yet, or importing. */
export function imageStep(image: VirtualMachineImage): ImageStep {
  const conditions = image.status?.conditions;
  if (conditionIs(conditions, 'RetryLimitExceeded', 'True')) return 'failed';
  if (conditionIs(conditions, 'Imported', 'True')) return 'label';
  if (!conditionIs(conditions, 'Initialized', 'True')) return 'initialize';
  return 'import';
}

/**
 * The image marked Initialized with the import just begun (Imported Unknown), its
 * StorageClass recorded; undefined when it is already Initialized.
 */
export function initializedImage(
  img: VirtualMachineImage,
  storageClassName: string,
  now: string,
): VirtualMachineImage | undefined {
  if (conditionIs(img.status?.conditions, 'Initialized', 'True')) return undefined;
  let conditions = setCondition(img.status?.conditions, 'Imported', {
    status: 'Unknown',
    reason: 'Importing',
  });
  conditions = setCondition(conditions, 'Imported', { lastUpdateTime: now });
  conditions = setCondition(conditions, 'Initialized', {
    status: 'True',
    message: '',
    reason: 'Initialized',
  });
  conditions = setCondition(conditions, 'Initialized', { lastUpdateTime: now });
  img.status = {
    ...img.status,
    ...(img.spec.url ? { appliedUrl: img.spec.url } : {}),
    storageClassName,
    progress: 0,
    failed: img.status?.failed ?? 0,
    conditions,
  };
  return img;
}

/** The image marked Imported with Longhorn's sizes; undefined when it already is. */
export function importedImage(img: VirtualMachineImage): VirtualMachineImage | undefined {
  if (conditionIs(img.status?.conditions, 'Imported', 'True')) return undefined;
  let conditions = setCondition(img.status?.conditions, 'Imported', {
    status: 'True',
    reason: 'Imported',
    message: '',
  });
  conditions = setCondition(conditions, 'RetryLimitExceeded', { status: 'False', reason: '', message: '' });
  img.status = {
    ...img.status,
    progress: 100,
    size: IMPORTED_IMAGE_SIZE,
    virtualSize: IMPORTED_IMAGE_VIRTUAL_SIZE,
    conditions,
  };
  return img;
}

/** Harvester keeps the display name as a label, to list images by it: the merge patch that sets it, if needed. */
export function displayNameLabelPatch(img: VirtualMachineImage): Record<string, unknown> | undefined {
  return img.metadata.labels?.[Labels.imageDisplayName] === img.spec.displayName
    ? undefined
    : { metadata: { labels: { [Labels.imageDisplayName]: img.spec.displayName } } };
}
