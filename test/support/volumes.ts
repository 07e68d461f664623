// Volume checks for removal tests: what exists, what is on its way out, waiting for both.
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import type { VirtualMachine } from '../../src/harvester/types.js';
import { decideOwnership } from '../../src/harvester/guest-volumes.js';
import type { PersistentVolumeClaim } from '../../src/harvester/types.js';
import type { CsiStandIn } from '../../sandbox/standins/csi/csi.js';

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

/**
 * A guest cluster's volume as the CSI driver makes it (no label: the released driver sets none),
 * with its ownership then recorded as the cleanup controller records it from the guest's PVs once
 * Harvester corroborates it: the label the driver's whole-cluster removal selects on and the
 * annotations naming the guest PV and the evidence (src/harvester/guest-volumes.ts decideOwnership).
 */
export async function recordedVolume(
  csi: CsiStandIn,
  admin: KubeClient,
  req: { namespace: string; size: string; cluster: string },
): Promise<string> {
  const name = await csi.createVolume({ namespace: req.namespace, size: req.size });
  const pvc = await admin.get<PersistentVolumeClaim>(Resources.pvc, { namespace: req.namespace, name });
  const decision = decideOwnership({
    cluster: req.cluster,
    volume: { pv: name, hostPvc: name, claim: `default/data-${name.slice(-5)}` },
    pvc,
    // The cluster existed before its CSI volume (part of the ownership evidence).
    clusterCreated: new Date(Date.parse(pvc.metadata.creationTimestamp ?? '') - 60_000).toISOString(),
    now: new Date(),
    path: 'watch',
  });
  if (decision.action !== 'write' || decision.outcome !== 'corroborated')
    throw new Error(
      `${name} cannot be recorded: ${decision.action} ${'reason' in decision ? decision.reason : ''}`,
    );
  await admin.patch(
    Resources.pvc,
    { namespace: req.namespace, name },
    { metadata: { labels: decision.labels, annotations: decision.annotations } },
  );
  return name;
}
