// The controller's view of Rancher's local cluster: one shared cache per kind (one informer
// per watched namespace, or one for all namespaces), each object slimmed to the fields used.
import type { Cache, Manager } from '../../kube/index.js';
import { Resources, type KubeObject } from '../../kube/resources.js';
import {
  slimCluster,
  slimHarvesterMachine as slimHarvesterMachineOf,
  slimMachine as slimMachineOf,
  slimSecret as slimSecretOf,
} from './cache-transforms.js';
import { shapeChecked } from './object-shape.js';
import type { ControllerConfig } from '../process/config.js';
import { formatSecretRef, parseCredentialRef } from './credential-choice.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../rancher/labels.js';
import type {
  CapiCluster,
  CapiMachine,
  HarvesterMachine,
  ProvisioningCluster,
  SecretObject,
} from './types.js';
import { keyText } from '../../api/object-key.js';

export type { Cache } from '../../kube/index.js';

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
  keyText(namespace, cluster);

export function rancherCaches(
  manager: Manager,
  config: Pick<
    ControllerConfig,
    'namespaces' | 'credentialNamespace' | 'credentialLabelSelector' | 'credentialFieldSelector'
  >,
  /** An object dropped as malformed where it entered its cache: its kind and why. */
  onDropped: (kind: string, reason: string) => void = () => undefined,
): RancherCaches {
  const { namespaces } = config;
  // Each transform behind its shape check (object-shape.ts): a malformed object is dropped, counted.
  const checked = (kind: string, slim: (o: KubeObject) => KubeObject) =>
    shapeChecked<KubeObject>(slim, (reason) => onDropped(kind, reason));
  const slimMachine = checked('Machine', slimMachineOf);
  const slimHarvesterMachine = checked('HarvesterMachine', slimHarvesterMachineOf);
  const slimCapiCluster = checked('Cluster', slimCluster);
  const slimProvisioningCluster = checked('provisioning Cluster', slimCluster);
  const slimSecret = checked('Secret', slimSecretOf);
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
    capiClusters: manager.cache({ type: Resources.capiCluster, namespaces, transform: slimCapiCluster }),
    provisioningClusters: manager.cache({
      type: Resources.provisioningCluster,
      namespaces,
      transform: slimProvisioningCluster,
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
