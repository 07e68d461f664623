// The kinds we read and write, as group/version/plural descriptors.

export interface ResourceType {
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

const t = (
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
  namespace: t('', 'v1', 'namespaces', 'Namespace', false),
  secret: t('', 'v1', 'secrets', 'Secret'),
  pvc: t('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
  event: t('', 'v1', 'events', 'Event'),
  configMap: t('', 'v1', 'configmaps', 'ConfigMap'),
  serviceAccount: t('', 'v1', 'serviceaccounts', 'ServiceAccount'),
  storageClass: t('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  lease: t('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  clusterRole: t('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  clusterRoleBinding: t(
    'rbac.authorization.k8s.io',
    'v1',
    'clusterrolebindings',
    'ClusterRoleBinding',
    false,
  ),
  role: t('rbac.authorization.k8s.io', 'v1', 'roles', 'Role'),
  roleBinding: t('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding'),
  crd: t('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  tokenReview: t('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview', false),
  subjectAccessReview: t('authorization.k8s.io', 'v1', 'subjectaccessreviews', 'SubjectAccessReview', false),
  selfSubjectAccessReview: t(
    'authorization.k8s.io',
    'v1',
    'selfsubjectaccessreviews',
    'SelfSubjectAccessReview',
    false,
  ),
  selfSubjectReview: t('authentication.k8s.io', 'v1', 'selfsubjectreviews', 'SelfSubjectReview', false),

  virtualMachine: t('kubevirt.io', 'v1', 'virtualmachines', 'VirtualMachine'),
  virtualMachineInstance: t('kubevirt.io', 'v1', 'virtualmachineinstances', 'VirtualMachineInstance'),
  setting: t('harvesterhci.io', 'v1beta1', 'settings', 'Setting', false),
  virtualMachineImage: t('harvesterhci.io', 'v1beta1', 'virtualmachineimages', 'VirtualMachineImage'),
  keyPair: t('harvesterhci.io', 'v1beta1', 'keypairs', 'KeyPair'),
  loadBalancer: t('loadbalancer.harvesterhci.io', 'v1beta1', 'loadbalancers', 'LoadBalancer'),
  ipPool: t('loadbalancer.harvesterhci.io', 'v1beta1', 'ippools', 'IPPool', false),
  networkAttachmentDefinition: t(
    'k8s.cni.cncf.io',
    'v1',
    'network-attachment-definitions',
    'NetworkAttachmentDefinition',
  ),
  // Harvester's pcidevices-controller add-on: cluster-scoped devices and their claims.
  pciDevice: t('devices.harvesterhci.io', 'v1beta1', 'pcidevices', 'PCIDevice', false),
  pciDeviceClaim: t('devices.harvesterhci.io', 'v1beta1', 'pcideviceclaims', 'PCIDeviceClaim', false),
  usbDevice: t('devices.harvesterhci.io', 'v1beta1', 'usbdevices', 'USBDevice', false),
  usbDeviceClaim: t('devices.harvesterhci.io', 'v1beta1', 'usbdeviceclaims', 'USBDeviceClaim', false),

  capiCluster: t('cluster.x-k8s.io', 'v1beta1', 'clusters', 'Cluster'),
  capiMachine: t('cluster.x-k8s.io', 'v1beta1', 'machines', 'Machine'),
  provisioningCluster: t('provisioning.cattle.io', 'v1', 'clusters', 'Cluster'),
  harvesterMachine: t('rke-machine.cattle.io', 'v1', 'harvestermachines', 'HarvesterMachine'),
  harvesterConfig: t('rke-machine-config.cattle.io', 'v1', 'harvesterconfigs', 'HarvesterConfig'),
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

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<{
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
    blockOwnerDeletion?: boolean;
  }>;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface ObjectList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}
