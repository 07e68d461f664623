// What Longhorn's CSI sidecars do for the driver's volumes, reduced to the Kubernetes objects:
// - the external-provisioner: a claim kube-controller-manager's PV controller hands to
//   driver.longhorn.io (annotation volume.kubernetes.io/storage-provisioner) gets a
//   PersistentVolume `pvc-<claim uid>` of the requested size, pre-bound to it (claimRef); the
//   PV controller then binds the two (spec.volumeName, Bound), as on Harvester;
// - the provisioner's deletion: a Released volume with the Delete policy is deleted;
// - the external-resizer with online expansion: a larger request on a Bound claim grows the
//   volume and the claim's status capacity.
// Claims of other classes stay Pending, as they would. Also installs the `harvester-longhorn`
// default StorageClass Harvester's chart ships.
import { keyOf, objectKey } from '../../../src/api/object-key.js';
import type { PersistentVolume } from '../../../src/api/core.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { ignoreAlreadyExists, isKubeError } from '../../../src/kube/errors.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import { KubeVirtResources } from '../../kubevirt/resources.js';
import type { StandInContext } from '../context.js';
import { Annotations, DEFAULT_STORAGE_CLASS, LONGHORN_PROVISIONER } from '../names.js';
import { compareQuantities } from '../quantity.js';
import type { PersistentVolumeClaim, StorageClass } from '../types.js';
import { refOf, updateWithRetry } from '../writes.js';

/** The PV controller's hand-over to an external provisioner (k8s.io/component-helpers storage/volume). */
const STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
const PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';

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

/** The volume the external-provisioner makes for a claim (its name: "pvc-" + the claim's UID). */
export function provisionedVolume(pvc: PersistentVolumeClaim, cls: StorageClass): PersistentVolume {
  const name = `pvc-${pvc.metadata.uid ?? ''}`;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, annotations: { [PROVISIONED_BY]: LONGHORN_PROVISIONER } },
    spec: {
      capacity: { storage: pvc.spec.resources?.requests?.storage ?? '0' },
      accessModes: pvc.spec.accessModes ?? [],
      ...(pvc.spec.volumeMode ? { volumeMode: pvc.spec.volumeMode } : {}),
      storageClassName: cls.metadata.name,
      persistentVolumeReclaimPolicy: cls.reclaimPolicy ?? 'Delete',
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: pvc.metadata.namespace ?? '',
        name: pvc.metadata.name,
        uid: pvc.metadata.uid ?? '',
      },
      csi: { driver: LONGHORN_PROVISIONER, volumeHandle: name, volumeAttributes: cls.parameters ?? {} },
    },
  };
}

export function longhornBinder(ctx: StandInContext): Controller[] {
  const pvcs = ctx.manager.cache<PersistentVolumeClaim>({ type: Resources.pvc });
  const pvs = ctx.manager.cache<PersistentVolume>({ type: KubeVirtResources.persistentVolume });
  const classes = ctx.manager.cache<StorageClass>({ type: Resources.storageClass });

  const longhornClass = (pvc: PersistentVolumeClaim): StorageClass | undefined => {
    const name = pvc.spec.storageClassName;
    const cls = name !== undefined ? classes.get(objectKey('', name)) : undefined;
    return cls?.provisioner === LONGHORN_PROVISIONER ? cls : undefined;
  };

  async function provision(pvc: PersistentVolumeClaim, cls: StorageClass): Promise<void> {
    if (pvc.metadata.annotations?.[STORAGE_PROVISIONER] !== LONGHORN_PROVISIONER) return;
    const volume = provisionedVolume(pvc, cls);
    if (pvs.get(keyOf(volume))) return;
    await ctx.client
      .create<PersistentVolume>(KubeVirtResources.persistentVolume, volume)
      .catch(ignoreAlreadyExists);
  }

  /** Online expansion: the volume first, then the claim's capacity (the resizer's order). */
  async function expand(pvc: PersistentVolumeClaim, cls: StorageClass, volumeName: string): Promise<void> {
    const requested = pvc.spec.resources?.requests?.storage;
    const capacity = pvc.status?.capacity?.storage;
    if (pvc.status?.phase !== 'Bound' || !requested || !capacity) return;
    if (compareQuantities(capacity, requested) >= 0 || cls.allowVolumeExpansion !== true) return;
    const pv = pvs.get(objectKey('', volumeName));
    if (pv && compareQuantities(pv.spec.capacity?.storage ?? '0', requested) < 0) {
      await updateWithRetry(ctx.client, KubeVirtResources.persistentVolume, pv, refOf(pv), (v) =>
        compareQuantities(v.spec.capacity?.storage ?? '0', requested) >= 0
          ? undefined
          : { ...v, spec: { ...v.spec, capacity: { ...v.spec.capacity, storage: requested } } },
      );
    }
    await updateWithRetry(
      ctx.client,
      Resources.pvc,
      pvc,
      refOf(pvc),
      (c) => {
        const want = c.spec.resources?.requests?.storage;
        const has = c.status?.capacity?.storage;
        if (!want || (has !== undefined && compareQuantities(has, want) >= 0)) return undefined;
        return { ...c, status: { ...c.status, capacity: { ...c.status?.capacity, storage: want } } };
      },
      'status',
    );
  }

  const provisioner = ctx.manager
    .controller('longhorn-provisioner', {
      reconcile: async (key) => {
        const pvc = pvcs.get(key);
        if (!pvc || pvc.metadata.deletionTimestamp) return;
        const cls = longhornClass(pvc);
        if (!cls) return;
        if (pvc.spec.volumeName) await expand(pvc, cls, pvc.spec.volumeName);
        else await provision(pvc, cls);
      },
    })
    .watch(pvcs);
  // A class created after its claims (an image's class) makes them provisionable.
  provisioner.watch(classes, (e) =>
    pvcs.list((p) => p.spec.storageClassName === e.object.metadata.name).map(keyOf),
  );

  const deleter = ctx.manager
    .controller('longhorn-deleter', {
      reconcile: async (key) => {
        const pv = pvs.get(key);
        if (!pv || pv.metadata.deletionTimestamp) return;
        if (pv.metadata.annotations?.[PROVISIONED_BY] !== LONGHORN_PROVISIONER) return;
        if (pv.status?.phase !== 'Released' || pv.spec.persistentVolumeReclaimPolicy !== 'Delete') return;
        await ctx.client.delete(KubeVirtResources.persistentVolume, key);
      },
    })
    .watch(pvs);
  return [provisioner, deleter];
}
