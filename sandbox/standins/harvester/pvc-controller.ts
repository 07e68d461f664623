// Harvester's "persistentvolumeclaim-controller" (pkg/controller/master/pvc): a wrangler
// OnRemove handler on every PVC of the cluster, so every PVC carries its finalizer. On
// removal the real one deletes a CDI DataVolume made for the PVC; the sandbox has no CDI,
// so removal is just the finalizer going.
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Finalizers } from '../names.js';
import { Reconciler } from '../runtime.js';
import type { PersistentVolumeClaim } from '../types.js';
import { patchFinalizers, withFinalizer, withoutFinalizer } from '../writes.js';

export function harvesterPvcController(ctx: StandInContext): Reconciler {
  const pvcs = ctx.informers.get<PersistentVolumeClaim>(Resources.pvc);
  return new Reconciler(
    'harvester-pvc',
    async (key) => {
      const pvc = pvcs.get(key);
      if (!pvc) return;
      const change = pvc.metadata.deletionTimestamp
        ? withoutFinalizer(Finalizers.harvesterPvc)
        : withFinalizer(Finalizers.harvesterPvc);
      // Never add the finalizer to an object that is already going (wrangler doesn't either).
      await patchFinalizers(ctx.client, Resources.pvc, pvc, change);
    },
    ctx.logger.child({ controller: 'harvester-pvc' }),
  ).watch(pvcs);
}
