// The controller's view of Rancher's local cluster: one shared cache per kind (one informer
// per watched namespace, or one for all namespaces), each object slimmed to the fields used.
import type { Cache, Manager } from '../kube/index.js';
import { Resources } from '../kube/resources.js';
import { slimCluster, slimHarvesterMachine, slimMachine, slimSecret } from './cache-transforms.js';
import type { ControllerConfig } from './config.js';
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

export function rancherCaches(
  manager: Manager,
  config: Pick<
    ControllerConfig,
    'namespaces' | 'credentialNamespace' | 'credentialLabelSelector' | 'credentialFieldSelector'
  >,
): RancherCaches {
  const { namespaces } = config;
  return {
    machines: manager.cache({ type: Resources.capiMachine, namespaces, transform: slimMachine }),
    capiClusters: manager.cache({ type: Resources.capiCluster, namespaces, transform: slimCluster }),
    provisioningClusters: manager.cache({
      type: Resources.provisioningCluster,
      namespaces,
      transform: slimCluster,
    }),
    harvesterMachines: manager.cache({
      type: Resources.harvesterMachine,
      namespaces,
      transform: slimHarvesterMachine,
    }),
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
