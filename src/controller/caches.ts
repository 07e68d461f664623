// The controller's view of Rancher's local cluster: one shared cache per kind (one informer
// per watched namespace, or one for all namespaces), each object slimmed to the fields used.
import type { Cache, Manager } from '../kube/index.js';
import { Resources } from '../kube/resources.js';
import { slimCluster, slimHarvesterMachine, slimMachine, slimSecret } from './cache-transforms.js';
import type { ControllerConfig } from './config.js';
import { formatSecretRef, parseCredentialRef } from './credential-choice.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../rancher/labels.js';
import type {
  CapiCluster,
  CapiMachine,
  HarvesterMachine,
  ProvisioningCluster,
  SecretObject,
} from './types.js';

export type { Cache } from '../kube/index.js';

export interface RancherCaches {
  machines: Cache<CapiMachine>;
  capiClusters: Cache<CapiCluster>;
  provisioningClusters: Cache<ProvisioningCluster>;
  harvesterMachines: Cache<HarvesterMachine>;
  credentials: Cache<SecretObject>;
}

/** Index names: "namespace/cluster" of Machines and HarvesterMachines, "namespace/name" of a Machine's infrastructure, a HarvesterMachine's credential Secret ("namespace/name"). */
export const BY_CLUSTER = 'cluster';
export const BY_INFRASTRUCTURE = 'infrastructure';
export const BY_CREDENTIAL = 'credential';

export const clusterIndexKey = (namespace: string | undefined, cluster: string): string =>
  `${namespace ?? ''}/${cluster}`;

export function rancherCaches(
  manager: Manager,
  config: Pick<
    ControllerConfig,
    'namespaces' | 'credentialNamespace' | 'credentialLabelSelector' | 'credentialFieldSelector'
  >,
): RancherCaches {
  const { namespaces } = config;
  // Indexed so that an event of one cluster costs that cluster's objects, not the site's.
  const machines = manager
    .cache<CapiMachine>({ type: Resources.capiMachine, namespaces, transform: slimMachine })
    .addIndex(BY_CLUSTER, (m) =>
      m.spec?.clusterName ? [clusterIndexKey(m.metadata.namespace, m.spec.clusterName)] : [],
    )
    .addIndex(BY_INFRASTRUCTURE, (m) =>
      m.spec?.infrastructureRef?.name
        ? [clusterIndexKey(m.metadata.namespace, m.spec.infrastructureRef.name)]
        : [],
    );
  const harvesterMachines = manager
    .cache<HarvesterMachine>({
      type: Resources.harvesterMachine,
      namespaces,
      transform: slimHarvesterMachine,
    })
    .addIndex(BY_CLUSTER, (hm) => {
      const cluster = hm.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME];
      return cluster ? [clusterIndexKey(hm.metadata.namespace, cluster)] : [];
    })
    .addIndex(BY_CREDENTIAL, (hm) => {
      const ref = parseCredentialRef(hm.spec?.common?.cloudCredentialSecretName, hm.metadata.namespace ?? '');
      return ref ? [formatSecretRef(ref)] : [];
    });
  return {
    machines,
    capiClusters: manager.cache({ type: Resources.capiCluster, namespaces, transform: slimCluster }),
    provisioningClusters: manager.cache({
      type: Resources.provisioningCluster,
      namespaces,
      transform: slimCluster,
    }),
    harvesterMachines,
    // The only Secrets the controller may read; a selector keeps the others off the wire.
    credentials: manager.cache({
      type: Resources.secret,
      namespaces: [config.credentialNamespace],
      ...(config.credentialLabelSelector ? { labelSelector: config.credentialLabelSelector } : {}),
      ...(config.credentialFieldSelector ? { fieldSelector: config.credentialFieldSelector } : {}),
      transform: slimSecret,
    }),
  };
}
