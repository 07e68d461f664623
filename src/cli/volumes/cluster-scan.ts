// Reads what the orphan finder decides on: PVCs, VMs, VM instances, pods and events, of
// one namespace or of all. Pods and events are extra evidence: without permission to
// list them the finder still works, on VMs and VM instances alone.
import type { VirtualMachine, VirtualMachineInstance } from '../../harvester/types.js';
import type { KubeClient } from '../../kube/client.js';
import { isKubeError } from '../../kube/errors.js';
import { Resources, type KubeObject, type ResourceType } from '../../kube/resources.js';
import type { ClusterScan, EventLike, HostPvc, PodLike } from '../../harvester/orphaned-volumes.js';

async function listAll<T>(
  client: KubeClient,
  type: ResourceType,
  namespace: string | undefined,
): Promise<T[]> {
  const list = await client.list<KubeObject>(type, namespace !== undefined ? { namespace } : {});
  return list.items as unknown as T[];
}

async function listOptional<T>(
  client: KubeClient,
  type: ResourceType,
  namespace: string | undefined,
): Promise<T[] | undefined> {
  try {
    return await listAll<T>(client, type, namespace);
  } catch (err) {
    if (isKubeError(err, 'Forbidden', 'NotFound')) return undefined;
    throw err;
  }
}

/** One namespace, or every namespace when `namespace` is undefined. */
export async function scanCluster(client: KubeClient, namespace: string | undefined): Promise<ClusterScan> {
  const [pvcs, vms, vmis, pods, events] = await Promise.all([
    listAll<HostPvc>(client, Resources.pvc, namespace),
    listAll<VirtualMachine>(client, Resources.virtualMachine, namespace),
    listAll<VirtualMachineInstance>(client, Resources.virtualMachineInstance, namespace),
    listOptional<PodLike>(client, Resources.pod, namespace),
    listOptional<EventLike>(client, Resources.event, namespace),
  ]);
  return { pvcs, vms, vmis, ...(pods ? { pods } : {}), events: events ?? [] };
}
