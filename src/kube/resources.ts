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

/** A kind's ResourceType (namespaced unless said otherwise). */
export const resourceType = (
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced = true,
): ResourceType => ({
  group,
  version,
  plural,
  kind,
  namespaced,
});

export const Resources = {
  namespace: resourceType('', 'v1', 'namespaces', 'Namespace', false),
  secret: resourceType('', 'v1', 'secrets', 'Secret'),
  pvc: resourceType('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
  event: resourceType('', 'v1', 'events', 'Event'),
  configMap: resourceType('', 'v1', 'configmaps', 'ConfigMap'),
  serviceAccount: resourceType('', 'v1', 'serviceaccounts', 'ServiceAccount'),
  storageClass: resourceType('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  lease: resourceType('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  clusterRole: resourceType('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  clusterRoleBinding: resourceType(
    'rbac.authorization.k8s.io',
    'v1',
    'clusterrolebindings',
    'ClusterRoleBinding',
    false,
  ),
  role: resourceType('rbac.authorization.k8s.io', 'v1', 'roles', 'Role'),
  roleBinding: resourceType('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding'),
  crd: resourceType(
    'apiextensions.k8s.io',
    'v1',
    'customresourcedefinitions',
    'CustomResourceDefinition',
    false,
  ),
  tokenReview: resourceType('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview', false),
  subjectAccessReview: resourceType(
    'authorization.k8s.io',
    'v1',
    'subjectaccessreviews',
    'SubjectAccessReview',
    false,
  ),
  selfSubjectAccessReview: resourceType(
    'authorization.k8s.io',
    'v1',
    'selfsubjectaccessreviews',
    'SelfSubjectAccessReview',
    false,
  ),
  selfSubjectReview: resourceType(
    'authentication.k8s.io',
    'v1',
    'selfsubjectreviews',
    'SelfSubjectReview',
    false,
  ),

  virtualMachine: resourceType('kubevirt.io', 'v1', 'virtualmachines', 'VirtualMachine'),
  virtualMachineInstance: resourceType(
    'kubevirt.io',
    'v1',
    'virtualmachineinstances',
    'VirtualMachineInstance',
  ),
  setting: resourceType('harvesterhci.io', 'v1beta1', 'settings', 'Setting', false),
  virtualMachineImage: resourceType(
    'harvesterhci.io',
    'v1beta1',
    'virtualmachineimages',
    'VirtualMachineImage',
  ),
  keyPair: resourceType('harvesterhci.io', 'v1beta1', 'keypairs', 'KeyPair'),
  loadBalancer: resourceType('loadbalancer.harvesterhci.io', 'v1beta1', 'loadbalancers', 'LoadBalancer'),
  ipPool: resourceType('loadbalancer.harvesterhci.io', 'v1beta1', 'ippools', 'IPPool', false),
  networkAttachmentDefinition: resourceType(
    'k8s.cni.cncf.io',
    'v1',
    'network-attachment-definitions',
    'NetworkAttachmentDefinition',
  ),
  // Harvester's pcidevices-controller add-on: cluster-scoped devices and their claims.
  pciDevice: resourceType('devices.harvesterhci.io', 'v1beta1', 'pcidevices', 'PCIDevice', false),
  pciDeviceClaim: resourceType(
    'devices.harvesterhci.io',
    'v1beta1',
    'pcideviceclaims',
    'PCIDeviceClaim',
    false,
  ),
  usbDevice: resourceType('devices.harvesterhci.io', 'v1beta1', 'usbdevices', 'USBDevice', false),
  usbDeviceClaim: resourceType(
    'devices.harvesterhci.io',
    'v1beta1',
    'usbdeviceclaims',
    'USBDeviceClaim',
    false,
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
