// Harvester's "vm-image-controller" with the backing-image backend (pkg/image, v1.8.0),
// as seen from outside: it makes a StorageClass for the image (named `lh-<image UID>`,
// or the legacy `longhorn-<image name>` when such a class already exists), records it in
// status.storageClassName, and walks the conditions Initialized -> Imported as the
// Longhorn backing image downloads. Nothing is downloaded here: the import succeeds at
// once with a fixed size. Its OnRemove handler deletes the StorageClass.
import { objectKey } from '../../../src/api/object-key.js';
import { isKubeError } from '../../../src/kube/errors.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Finalizers, Labels, LONGHORN_PROVISIONER } from '../names.js';
import { nowIso } from '../runtime.js';
import type { StorageClass, VirtualMachineImage } from '../types.js';
import {
  mergePatchWithRetry,
  patchFinalizers,
  refOf,
  updateWithRetry,
  withFinalizer,
  withoutFinalizer,
} from '../writes.js';
import { conditionIs, setCondition } from './conditions.js';

/** What Longhorn would report for a small cloud image (bytes). */
export const IMPORTED_IMAGE_SIZE = 629_145_600;
export const IMPORTED_IMAGE_VIRTUAL_SIZE = 2_361_393_152;

/** Harvester's mutating webhook fills these in when the image spec has none. */
const DEFAULT_SC_PARAMETERS = { numberOfReplicas: '3', staleReplicaTimeout: '30', migratable: 'true' };

export function imageController(ctx: StandInContext): Controller {
  const { client } = ctx;
  const images = ctx.manager.cache<VirtualMachineImage>({ type: Resources.virtualMachineImage });
  const classes = ctx.manager.cache<StorageClass>({ type: Resources.storageClass });

  const storageClassNameFor = (image: VirtualMachineImage): string => {
    if (image.spec.backend === 'cdi') return image.spec.targetStorageClassName ?? '';
    const legacy = `longhorn-${image.metadata.name}`;
    return classes.get(objectKey('', legacy)) ? legacy : `lh-${image.metadata.uid ?? ''}`;
  };

  async function createStorageClass(image: VirtualMachineImage, name: string): Promise<void> {
    try {
      await client.create<StorageClass>(Resources.storageClass, {
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
      });
    } catch (err) {
      if (!isKubeError(err, 'AlreadyExists')) throw err;
    }
  }

  async function initialize(image: VirtualMachineImage): Promise<void> {
    const scName = storageClassNameFor(image);
    if (image.spec.backend !== 'cdi') await createStorageClass(image, scName);
    await updateWithRetry(client, Resources.virtualMachineImage, image, refOf(image), (img) => {
      if (conditionIs(img.status?.conditions, 'Initialized', 'True')) return undefined;
      const now = nowIso();
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
        storageClassName: scName,
        progress: 0,
        failed: img.status?.failed ?? 0,
        conditions,
      };
      return img;
    });
  }

  async function markImported(image: VirtualMachineImage): Promise<void> {
    await updateWithRetry(client, Resources.virtualMachineImage, image, refOf(image), (img) => {
      if (conditionIs(img.status?.conditions, 'Imported', 'True')) return undefined;
      let conditions = setCondition(img.status?.conditions, 'Imported', {
        status: 'True',
        reason: 'Imported',
        message: '',
      });
      conditions = setCondition(conditions, 'RetryLimitExceeded', {
        status: 'False',
        reason: '',
        message: '',
      });
      img.status = {
        ...img.status,
        progress: 100,
        size: IMPORTED_IMAGE_SIZE,
        virtualSize: IMPORTED_IMAGE_VIRTUAL_SIZE,
        conditions,
      };
      return img;
    });
  }

  async function remove(image: VirtualMachineImage): Promise<void> {
    if (!(image.metadata.finalizers ?? []).includes(Finalizers.harvesterImage)) return;
    const scName = image.status?.storageClassName;
    if (image.spec.backend !== 'cdi' && scName) await client.delete(Resources.storageClass, { name: scName });
    await patchFinalizers(
      client,
      Resources.virtualMachineImage,
      image,
      withoutFinalizer(Finalizers.harvesterImage),
    );
  }

  return ctx.manager
    .controller('harvester-image', {
      reconcile: async (key) => {
        const image = images.get(key);
        if (!image) return;
        if (image.metadata.deletionTimestamp) return remove(image);
        const finalized = await patchFinalizers(
          client,
          Resources.virtualMachineImage,
          image,
          withFinalizer(Finalizers.harvesterImage),
        );
        if (finalized) return; // its own event brings the next step
        const conditions = image.status?.conditions;
        if (conditionIs(conditions, 'RetryLimitExceeded', 'True')) return;
        if (conditionIs(conditions, 'Imported', 'True')) {
          // Harvester keeps the display name as a label, to list images by it.
          await mergePatchWithRetry(client, Resources.virtualMachineImage, image, refOf(image), (img) =>
            img.metadata.labels?.[Labels.imageDisplayName] === img.spec.displayName
              ? undefined
              : { metadata: { labels: { [Labels.imageDisplayName]: img.spec.displayName } } },
          );
          return;
        }
        if (!conditionIs(conditions, 'Initialized', 'True')) return initialize(image);
        return markImported(image);
      },
      logger: ctx.logger.child({ controller: 'harvester-image' }),
    })
    .watch(images);
}
