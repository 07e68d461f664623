// Reads what the orphan finder decides on: PVCs, VMs, VM instances, pods and events, of
// one namespace or of all. Pods and events are extra evidence: without permission to
// list them the finder still works, on VMs and VM instances alone.
import type { HarvesterApi } from '../../harvester-access/harvester-api.js';
import { isKubeError } from '../../kube/errors.js';
import type { ClusterScan, EventLike, PodLike } from '../../harvester/orphaned-volumes.js';

async function listOptional<T>(list: () => Promise<unknown[]>): Promise<T[] | undefined> {
  try {
    return (await list()) as T[];
  } catch (err) {
    if (isKubeError(err, 'Forbidden', 'NotFound')) return undefined;
    throw err;
  }
}

/** One namespace, or every namespace when `namespace` is undefined. */
export async function scanCluster(
  harvester: HarvesterApi,
  namespace: string | undefined,
): Promise<ClusterScan> {
  const [pvcs, vms, vmis, pods, events] = await Promise.all([
    harvester.listPvcs(namespace),
    harvester.listVms(namespace),
    harvester.listVmis(namespace),
    listOptional<PodLike>(() => harvester.listPods(namespace)),
    listOptional<EventLike>(() => harvester.listEvents(namespace)),
  ]);
  return { pvcs, vms, vmis, ...(pods ? { pods } : {}), events: events ?? [] };
}
