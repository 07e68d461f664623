// The kinds the sandbox's KubeVirt needs beyond src/kube/resources.ts and sandbox/capi/resources.ts.
import { clusterResourceType, resourceType } from '../../src/kube/resources.js';

export const KubeVirtResources = {
  kubeVirt: resourceType('kubevirt.io', 'v1', 'kubevirts', 'KubeVirt'),
  apiService: clusterResourceType('apiregistration.k8s.io', 'v1', 'apiservices', 'APIService'),
  service: resourceType('', 'v1', 'services', 'Service'),
  persistentVolume: clusterResourceType('', 'v1', 'persistentvolumes', 'PersistentVolume'),
} as const;
