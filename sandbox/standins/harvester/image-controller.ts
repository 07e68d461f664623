// Harvester's "vm-image-controller" with the backing-image backend (pkg/image, v1.8.0),
// as seen from outside: it makes a StorageClass for the image (named `lh-<image UID>`,
// or the legacy `longhorn-<image name>` when such a class already exists), records it in
// status.storageClassName, and walks the conditions Initialized -> Imported as the
// Longhorn backing image downloads. Nothing is downloaded here: the import succeeds at
// once with a fixed size. Its OnRemove handler deletes the StorageClass. The pure
// decisions are in image-decisions.ts.
import { objectKey, type ObjectKey } from '../../../src/api/object-key.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { isKubeError } from '../../../src/kube/errors.js';
import type { Cache, Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { reconcileFinalizer } from '../finalizer.js';
import { Finalizers } from '../names.js';
import { nowIso } from '../runtime.js';
import type { StorageClass, VirtualMachineImage } from '../types.js';
import { mergePatchWithRetry, refOf, updateWithRetry } from '../writes.js';
import {
  displayNameLabelPatch,
  imageStep,
  importedImage,
  initializedImage,
  legacyStorageClassName,
  storageClassNameFor,
  storageClassOf,
} from './image-decisions.js';

export { IMPORTED_IMAGE_SIZE, IMPORTED_IMAGE_VIRTUAL_SIZE } from './image-decisions.js';

/** Creates the image's StorageClass; one already there is kept. */
async function createStorageClass(
  client: KubeClient,
  image: VirtualMachineImage,
  name: string,
): Promise<void> {
  try {
    await client.create<StorageClass>(Resources.storageClass, storageClassOf(image, name));
  } catch (err) {
    if (!isKubeError(err, 'AlreadyExists')) throw err;
  }
}

/** The OnRemove handler: deletes the StorageClass the image recorded (not a CDI image's target class). */
async function deleteStorageClass(client: KubeClient, image: VirtualMachineImage): Promise<void> {
  const scName = image.status?.storageClassName;
  if (image.spec.backend !== 'cdi' && scName) await client.delete(Resources.storageClass, { name: scName });
}

/** The image controller's reconcile of one image, over the image and StorageClass caches. */
export function imageReconciler(
  client: KubeClient,
  images: Cache<VirtualMachineImage>,
  classes: Cache<StorageClass>,
): (key: ObjectKey) => Promise<void> {
  const write = (
    image: VirtualMachineImage,
    change: (img: VirtualMachineImage) => VirtualMachineImage | undefined,
  ) => updateWithRetry(client, Resources.virtualMachineImage, image, refOf(image), change);

  async function initialize(image: VirtualMachineImage): Promise<void> {
    const legacyExists = classes.get(objectKey('', legacyStorageClassName(image))) !== undefined;
    const scName = storageClassNameFor(image, legacyExists);
    if (image.spec.backend !== 'cdi') await createStorageClass(client, image, scName);
    await write(image, (img) => initializedImage(img, scName, nowIso()));
  }

  return async (key) => {
    const image = images.get(key);
    if (!image) return;
    const finalizer = await reconcileFinalizer(
      client,
      Resources.virtualMachineImage,
      image,
      Finalizers.harvesterImage,
      (img) => deleteStorageClass(client, img),
    );
    if (finalizer !== 'present') return; // deleting, or the write's own event brings the next step
    switch (imageStep(image)) {
      case 'failed':
        return;
      case 'label':
        await mergePatchWithRetry(
          client,
          Resources.virtualMachineImage,
          image,
          refOf(image),
          displayNameLabelPatch,
        );
        return;
      case 'initialize':
        return initialize(image);
      case 'import':
        await write(image, importedImage);
        return;
    }
  };
}

/** Sets up the image controller on the stand-ins' manager: images and StorageClasses cached, images watched. */
export function imageController(ctx: StandInContext): Controller {
  const images = ctx.manager.cache<VirtualMachineImage>({ type: Resources.virtualMachineImage });
  const classes = ctx.manager.cache<StorageClass>({ type: Resources.storageClass });
  return ctx.manager
    .controller('harvester-image', {
      reconcile: imageReconciler(ctx.client, images, classes),
      logger: ctx.logger.child({ controller: 'harvester-image' }),
    })
    .watch(images);
}
