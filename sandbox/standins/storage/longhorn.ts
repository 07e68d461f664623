// What Longhorn (with the CSI external-provisioner and -resizer) does for the driver's
// volumes, reduced to what is visible on the PVC: a claim whose StorageClass is
// provisioned by driver.longhorn.io becomes Bound with the requested capacity, and a
// larger request is expanded online. Claims of other classes stay Pending, as they would.
// Also installs the `harvester-longhorn` default StorageClass Harvester's chart ships.
import { keyOf, objectKey } from '../../../src/api/object-key.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { isKubeError } from '../../../src/kube/errors.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Annotations, DEFAULT_STORAGE_CLASS, LONGHORN_PROVISIONER } from '../names.js';
import { compareQuantities } from '../quantity.js';

import type { PersistentVolumeClaim, StorageClass } from '../types.js';
import { refOf, updateWithRetry } from '../writes.js';

/** Harvester chart defaults (deploy/charts/harvester/templates/harvester-storageclass.yaml). */
export async function ensureDefaultStorageClass(client: KubeClient): Promise<void> {
  try {
    await client.create<StorageClass>(Resources.storageClass, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: {
        name: DEFAULT_STORAGE_CLASS,
        annotations: {
          [Annotations.isReservedStorageClass]: 'true',
          [Annotations.isDefaultStorageClass]: 'true',
        },
      },
      provisioner: LONGHORN_PROVISIONER,
      allowVolumeExpansion: true,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'Immediate',
      parameters: {
        numberOfReplicas: '3',
        staleReplicaTimeout: '30',
        fromBackup: '',
        baseImage: '',
        migratable: 'true',
      },
    });
  } catch (err) {
    if (!isKubeError(err, 'AlreadyExists')) throw err;
  }
}

export function longhornBinder(ctx: StandInContext): Controller {
  const pvcs = ctx.manager.cache<PersistentVolumeClaim>({ type: Resources.pvc });
  const classes = ctx.manager.cache<StorageClass>({ type: Resources.storageClass });

  const provisionedByLonghorn = (pvc: PersistentVolumeClaim): boolean => {
    const name = pvc.spec.storageClassName;
    return name !== undefined && classes.get(objectKey('', name))?.provisioner === LONGHORN_PROVISIONER;
  };

  const reconciler = ctx.manager
    .controller('longhorn', {
      reconcile: async (key) => {
        const cached = pvcs.get(key);
        if (!cached || cached.metadata.deletionTimestamp || !provisionedByLonghorn(cached)) return;
        await updateWithRetry(
          ctx.client,
          Resources.pvc,
          cached,
          refOf(cached),
          (pvc) => {
            const requested = pvc.spec.resources?.requests?.storage;
            if (!requested) return undefined;
            const capacity = pvc.status?.capacity?.storage;
            const bound = pvc.status?.phase === 'Bound';
            if (bound && capacity !== undefined && compareQuantities(capacity, requested) >= 0)
              return undefined;
            pvc.status = {
              ...pvc.status,
              phase: 'Bound',
              accessModes: pvc.spec.accessModes ?? [],
              capacity: { ...pvc.status?.capacity, storage: requested },
            };
            return pvc;
          },
          'status',
        );
      },
      logger: ctx.logger.child({ controller: 'longhorn' }),
    })
    .watch(pvcs);
  // A class created after its claims (an image's class) makes them bindable.
  classes.on((e) => {
    for (const pvc of pvcs.list((p) => p.spec.storageClassName === e.object.metadata.name)) {
      reconciler.enqueue(keyOf(pvc));
    }
  });
  return reconciler;
}
