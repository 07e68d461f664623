// The kinds the sandbox's Cluster API and Rancher stand-ins use beyond src/kube/resources.ts:
// Cluster API's MachineDeployment and MachineSet, Rancher's bootstrap and template kinds, the
// downstream cluster's Nodes, and the admission webhook configurations.
import { clusterResourceType, resourceType, type ResourceType } from '../../src/kube/resources.js';

const t = resourceType;

export const SandboxResources = {
  machineDeployment: t('cluster.x-k8s.io', 'v1beta1', 'machinedeployments', 'MachineDeployment'),
  machineSet: t('cluster.x-k8s.io', 'v1beta1', 'machinesets', 'MachineSet'),
  harvesterMachineTemplate: t(
    'rke-machine.cattle.io',
    'v1',
    'harvestermachinetemplates',
    'HarvesterMachineTemplate',
  ),
  rkeBootstrap: t('rke.cattle.io', 'v1', 'rkebootstraps', 'RKEBootstrap'),
  rkeBootstrapTemplate: t('rke.cattle.io', 'v1', 'rkebootstraptemplates', 'RKEBootstrapTemplate'),
  rkeCluster: t('rke.cattle.io', 'v1', 'rkeclusters', 'RKECluster'),
  rkeControlPlane: t('rke.cattle.io', 'v1', 'rkecontrolplanes', 'RKEControlPlane'),
  node: clusterResourceType('', 'v1', 'nodes', 'Node'),
  mutatingWebhookConfiguration: clusterResourceType(
    'admissionregistration.k8s.io',
    'v1',
    'mutatingwebhookconfigurations',
    'MutatingWebhookConfiguration',
  ),
  validatingWebhookConfiguration: clusterResourceType(
    'admissionregistration.k8s.io',
    'v1',
    'validatingwebhookconfigurations',
    'ValidatingWebhookConfiguration',
  ),
} as const;

/** A Machine API version's path segment: v1beta2 where Cluster API stores it. */
export function machineType(version: 'v1beta1' | 'v1beta2'): ResourceType {
  return t('cluster.x-k8s.io', version, 'machines', 'Machine');
}
