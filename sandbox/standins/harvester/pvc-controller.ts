// Harvester's "persistentvolumeclaim-controller" (pkg/controller/master/pvc): a wrangler
// OnRemove handler on every PVC of the cluster, so every PVC carries its finalizer. On
// removal the real one deletes a CDI DataVolume made for the PVC; the sandbox has no CDI,
// so removal is just the finalizer going.
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Finalizers } from '../names.js';

import type { PersistentVolumeClaim } from '../types.js';
import { patchFinalizers, withFinalizer, withoutFinalizer } from '../writes.js';

export function harvesterPvcController(ctx: StandInContext): Controller {
  const pvcs = ctx.manager.cache<PersistentVolumeClaim>({ type: Resources.pvc });
  return ctx.manager
    .controller('harvester-pvc', {
      reconcile: async (key) => {
        const pvc = pvcs.get(key);
        if (!pvc) return;
        const change = pvc.metadata.deletionTimestamp
          ? withoutFinalizer(Finalizers.harvesterPvc)
          : withFinalizer(Finalizers.harvesterPvc);
        // Never add the finalizer to an object that is already going (wrangler doesn't either).
        await patchFinalizers(ctx.client, Resources.pvc, pvc, change);
      },
      logger: ctx.logger.child({ controller: 'harvester-pvc' }),
    })
    .watch(pvcs);
}
