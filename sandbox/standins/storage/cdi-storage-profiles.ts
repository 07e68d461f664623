// CDI's StorageProfile controller, as far as Harvester's own storage class controller observes
// it: CDI makes one cluster-scoped StorageProfile named after each StorageClass (its status holds
// the class's claim properties, which nothing here reads). Without them Harvester's controller
// (v1.8.0 pkg/controller/master/storageclass) looks for each class's profile again every second,
// for ever: about 15 % of a core for Harvester's kube-apiserver and its own process in every
// sandbox. Source: kubevirt/containerized-data-importer pkg/controller/storageprofile-controller.go
// (one profile per class, same name).
import { keyOf, objectKey } from '../../../src/api/object-key.js';
import { ignoreAlreadyExists } from '../../../src/kube/errors.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources, clusterResourceType, type KubeObject } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import type { StorageClass } from '../types.js';

export const STORAGE_PROFILE = clusterResourceType(
  'cdi.kubevirt.io',
  'v1beta1',
  'storageprofiles',
  'StorageProfile',
);

/** The profile CDI makes for a class: its name, no settings of its own. Pure. */
export function storageProfileFor(cls: StorageClass): KubeObject {
  return {
    apiVersion: 'cdi.kubevirt.io/v1beta1',
    kind: 'StorageProfile',
    metadata: { name: cls.metadata.name },
    spec: {},
  } as KubeObject;
}

export function cdiStorageProfiles(ctx: StandInContext): Controller {
  const classes = ctx.manager.cache<StorageClass>({ type: Resources.storageClass });
  const profiles = ctx.manager.cache<KubeObject>({ type: STORAGE_PROFILE });
  return ctx.manager
    .controller('cdi-storage-profiles', {
      reconcile: async (key) => {
        const cls = classes.get(key);
        if (!cls || cls.metadata.deletionTimestamp || profiles.get(objectKey('', cls.metadata.name))) return;
        await ctx.client.create(STORAGE_PROFILE, storageProfileFor(cls)).catch(ignoreAlreadyExists);
      },
    })
    .watch(classes)
    .watch(profiles, (e) => [keyOf(e.object)]);
}
