// wrangler's OnRemove handler, as Harvester's controllers register it: the handler's
// finalizer goes on with the first change the controller sees; when the object is being
// deleted the handler runs while its finalizer is still there, and then takes it off.
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject, ResourceType } from '../../src/kube/resources.js';
import { patchFinalizers, withFinalizer, withoutFinalizer } from './writes.js';

/** What the finalizer step did: the object is being deleted, the finalizer was just added, or it was there. */
export type FinalizerStep = 'deleting' | 'added' | 'present';

/** The pure decision: what an object's state asks of the finalizer step. */
export function finalizerDecision(obj: KubeObject, finalizer: string): 'remove' | 'gone' | 'add' | 'present' {
  const has = (obj.metadata.finalizers ?? []).includes(finalizer);
  if (obj.metadata.deletionTimestamp) return has ? 'remove' : 'gone';
  return has ? 'present' : 'add';
}

/**
 * Adds `finalizer` to a live object; on one being deleted runs `onRemove` (once more after
 * each failure: the queue retries) and then takes the finalizer off. The caller returns on
 * 'deleting', and on 'added' too when it waits for the write's own event.
 */
export async function reconcileFinalizer<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  obj: T,
  finalizer: string,
  onRemove: (obj: T) => Promise<void>,
): Promise<FinalizerStep> {
  switch (finalizerDecision(obj, finalizer)) {
    case 'remove':
      await onRemove(obj);
      await patchFinalizers(client, type, obj, withoutFinalizer(finalizer));
      return 'deleting';
    case 'gone':
      return 'deleting';
    case 'add':
      return (await patchFinalizers(client, type, obj, withFinalizer(finalizer))) ? 'added' : 'present';
    case 'present':
      return 'present';
  }
}
