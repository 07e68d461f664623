// Volume checks for removal tests: what exists, what is on its way out, waiting for both.
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import type { VirtualMachine } from '../../src/harvester/types.js';

/** PVCs of a namespace that exist and are not being deleted. */
export async function livePvcs(admin: KubeClient, namespace: string): Promise<Set<string>> {
  const list = await admin.list<KubeObject>(Resources.pvc, { namespace });
  return new Set(list.items.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name));
}

export async function waitPvcGone(
  admin: KubeClient,
  namespace: string,
  name: string,
  timeoutMs = 30_000,
): Promise<void> {
  await waitFor(admin, {
    type: Resources.pvc,
    namespace,
    name,
    description: `PVC ${namespace}/${name} to be deleted`,
    timeoutMs,
    until: (o) => o === undefined,
    describeState: (o) => (o ? `present, finalizers ${JSON.stringify(o.metadata.finalizers ?? [])}` : 'gone'),
  });
}

/** The PVC names of a VM's volumes (boot disks and hot-plugged ones). */
export async function vmPvcNames(admin: KubeClient, namespace: string, name: string): Promise<string[]> {
  const vm = await admin.get<VirtualMachine & KubeObject>(Resources.virtualMachine, { namespace, name });
  return (vm.spec.template.spec.volumes ?? []).flatMap((v) =>
    v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : [],
  );
}

/** Waits until the stand-ins have created the PVCs a VM's templates ask for. */
export async function waitPvcExists(
  admin: KubeClient,
  namespace: string,
  name: string,
  timeoutMs = 30_000,
): Promise<void> {
  await waitFor(admin, {
    type: Resources.pvc,
    namespace,
    name,
    description: `PVC ${namespace}/${name} to exist`,
    timeoutMs,
    until: (o) => o !== undefined,
  });
}
