// The kinds we read and write, as group/version/plural descriptors.
export type { KubeObject, NewObject, ObjectList, ObjectMeta, OwnerReference } from '../api/meta.js';

export interface ResourceType {
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** A namespaced kind's ResourceType. */
export const resourceType = (group: string, version: string, plural: string, kind: string): ResourceType => ({
  group,
  version,
  plural,
  kind,
  namespaced: true,
});

/** A cluster-scoped kind's ResourceType (Namespace, StorageClass, ClusterRole, …). */
export const clusterResourceType = (
  group: string,
  version: string,
  plural: string,
  kind: string,
): ResourceType => ({
  ...resourceType(group, version, plural, kind),
  namespaced: false,
});

export const Resources = {
  namespace: clusterResourceType('', 'v1', 'namespaces', 'Namespace'),
  secret: resourceType('', 'v1', 'secrets', 'Secret'),
  pvc: resourceType('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
  persistentVolume: clusterResourceType('', 'v1', 'persistentvolumes', 'PersistentVolume'),
  pod: resourceType('', 'v1', 'pods', 'Pod'),
  event: resourceType('', 'v1', 'events', 'Event'),
  configMap: resourceType('', 'v1', 'configmaps', 'ConfigMap'),
  serviceAccount: resourceType('', 'v1', 'serviceaccounts', 'ServiceAccount'),
  storageClass: clusterResourceType('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass'),
  lease: resourceType('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  clusterRole: clusterResourceType('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole'),
  clusterRoleBinding: clusterResourceType(
    'rbac.authorization.k8s.io',
    'v1',
    'clusterrolebindings',
    'ClusterRoleBinding',
  ),
  role: resourceType('rbac.authorization.k8s.io', 'v1', 'roles', 'Role'),
  roleBinding: resourceType('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding'),
  crd: clusterResourceType(
    'apiextensions.k8s.io',
    'v1',
    'customresourcedefinitions',
    'CustomResourceDefinition',
  ),
  tokenReview: clusterResourceType('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview'),
  subjectAccessReview: clusterResourceType(
    'authorization.k8s.io',
    'v1',
    'subjectaccessreviews',
    'SubjectAccessReview',
  ),
  selfSubjectAccessReview: clusterResourceType(
    'authorization.k8s.io',
    'v1',
    'selfsubjectaccessreviews',
    'SelfSubjectAccessReview',
  ),
  selfSubjectReview: clusterResourceType(
    'authentication.k8s.io',
    'v1',
    'selfsubjectreviews',
    'SelfSubjectReview',
  ),

  virtualMachine: resourceType('kubevirt.io', 'v1', 'virtualmachines', 'VirtualMachine'),
  virtualMachineInstance: resourceType(
    'kubevirt.io',
    'v1',
    'virtualmachineinstances',
    'VirtualMachineInstance',
  ),
  setting: clusterResourceType('harvesterhci.io', 'v1beta1', 'settings', 'Setting'),
  virtualMachineImage: resourceType(
    'harvesterhci.io',
    'v1beta1',
    'virtualmachineimages',
    'VirtualMachineImage',
  ),
  keyPair: resourceType('harvesterhci.io', 'v1beta1', 'keypairs', 'KeyPair'),
  loadBalancer: resourceType('loadbalancer.harvesterhci.io', 'v1beta1', 'loadbalancers', 'LoadBalancer'),
  ipPool: clusterResourceType('loadbalancer.harvesterhci.io', 'v1beta1', 'ippools', 'IPPool'),
  networkAttachmentDefinition: resourceType(
    'k8s.cni.cncf.io',
    'v1',
    'network-attachment-definitions',
    'NetworkAttachmentDefinition',
  ),
  // Harvester's pcidevices-controller add-on: cluster-scoped devices and their claims.
  pciDevice: clusterResourceType('devices.harvesterhci.io', 'v1beta1', 'pcidevices', 'PCIDevice'),
  pciDeviceClaim: clusterResourceType(
    'devices.harvesterhci.io',
    'v1beta1',
    'pcideviceclaims',
    'PCIDeviceClaim',
  ),
  usbDevice: clusterResourceType('devices.harvesterhci.io', 'v1beta1', 'usbdevices', 'USBDevice'),
  usbDeviceClaim: clusterResourceType(
    'devices.harvesterhci.io',
    'v1beta1',
    'usbdeviceclaims',
    'USBDeviceClaim',
  ),

  capiCluster: resourceType('cluster.x-k8s.io', 'v1beta1', 'clusters', 'Cluster'),
  capiMachine: resourceType('cluster.x-k8s.io', 'v1beta1', 'machines', 'Machine'),
  provisioningCluster: resourceType('provisioning.cattle.io', 'v1', 'clusters', 'Cluster'),
  harvesterMachine: resourceType('rke-machine.cattle.io', 'v1', 'harvestermachines', 'HarvesterMachine'),
  harvesterConfig: resourceType('rke-machine-config.cattle.io', 'v1', 'harvesterconfigs', 'HarvesterConfig'),
} as const;

export function apiVersionOf(type: ResourceType): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** "virtualmachines.kubevirt.io", as kubectl and error messages name a resource. */
export function qualifiedName(type: ResourceType): string {
  return type.group ? `${type.plural}.${type.group}` : type.plural;
}

export interface ObjectPath {
  namespace?: string;
  name?: string;
  subresource?: string;
}

export function resourcePath(type: ResourceType, at: ObjectPath = {}): string {
  const base = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  let path = base;
  if (type.namespaced && at.namespace) path += `/namespaces/${encodeURIComponent(at.namespace)}`;
  path += `/${type.plural}`;
  if (at.name) path += `/${encodeURIComponent(at.name)}`;
  if (at.subresource) path += `/${at.subresource}`;
  return path;
}

/** "get virtualmachines.kubevirt.io default/vm1": how an operation is named in errors. */
export function describeOperation(verb: string, type: ResourceType, at: ObjectPath = {}): string {
  const where = [at.namespace, at.name].filter(Boolean).join('/');
  const sub = at.subresource ? `/${at.subresource}` : '';
  return `${verb} ${qualifiedName(type)}${sub}${where ? ' ' + where : ''}`;
}
