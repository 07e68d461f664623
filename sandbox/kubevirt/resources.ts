// The kinds the sandbox's KubeVirt needs beyond src/kube/resources.ts and sandbox/capi/resources.ts.
import { resourceType } from '../../src/kube/resources.js';

export const KubeVirtResources = {
  kubeVirt: resourceType('kubevirt.io', 'v1', 'kubevirts', 'KubeVirt'),
  apiService: resourceType('apiregistration.k8s.io', 'v1', 'apiservices', 'APIService', false),
  service: resourceType('', 'v1', 'services', 'Service'),
  pod: resourceType('', 'v1', 'pods', 'Pod'),
  persistentVolume: resourceType('', 'v1', 'persistentvolumes', 'PersistentVolume', false),
} as const;
