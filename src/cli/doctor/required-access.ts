// The access the driver's credential needs on Harvester: exactly the calls src/driver
// makes (src/harvester-access/harvester-api.ts and the waits), each with the operation that needs
// it, so a denial can be explained. Keep in step with HarvesterApi.

export interface AccessNeed {
  group: string;
  resource: string;
  /** Checked one by one (KubeVirt's subresource API): virtualmachines/start, ... */
  subresources?: readonly string[];
  verbs: readonly string[];
  scope: 'namespace' | 'cluster';
  usedFor: string;
  /** Without it the driver works and skips one check: a denial is a warning, not a failure. */
  optional?: true;
  /** Who needs it when not the driver itself: tells two checks of one resource apart. */
  by?: string;
}

export const DRIVER_ACCESS: readonly AccessNeed[] = [
  {
    group: 'kubevirt.io',
    resource: 'virtualmachines',
    // findVm, listVms, waits (list+watch), createVm, patchVmAnnotations, deleteVm
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    scope: 'namespace',
    usedFor: 'create, inspect and remove machines',
  },
  {
    group: 'kubevirt.io',
    resource: 'virtualmachineinstances',
    // findVmi and the waits for Running, an IP, Stopped
    verbs: ['get', 'list', 'watch'],
    scope: 'namespace',
    usedFor: 'machine state, IP address and the waits',
  },
  {
    group: 'subresources.kubevirt.io',
    resource: 'virtualmachines',
    subresources: ['start', 'stop', 'restart'],
    // vmAction: PUT .../virtualmachines/<vm>/<action>
    verbs: ['update'],
    scope: 'namespace',
    usedFor: 'start, stop and restart',
  },
  {
    group: '',
    resource: 'persistentvolumeclaims',
    // findPvc and listPvcs by the guest cluster's label (removal plan), deletePvc (volumes Harvester left behind)
    verbs: ['get', 'list', 'delete'],
    scope: 'namespace',
    usedFor: 'plan a removal and delete the volumes Harvester left behind',
  },
  {
    group: '',
    resource: 'persistentvolumeclaims',
    // harvester-machine-controller's ownership record of guest clusters' host volumes
    verbs: ['patch'],
    by: 'harvester-machine-controller',
    scope: 'namespace',
    usedFor:
      "harvester-machine-controller: label each host volume with its guest cluster, so a whole-cluster removal finds it (not the driver's)",
    optional: true,
  },
  {
    group: '',
    resource: 'pods',
    // the volume cleanup's check that nothing uses a deleted cluster's volume
    verbs: ['list'],
    by: 'harvester-machine-controller',
    scope: 'namespace',
    usedFor:
      "harvester-machine-controller: check that no pod uses a deleted cluster's volume before deleting it (not the driver's)",
    optional: true,
  },
  {
    group: '',
    resource: 'secrets',
    // the <vm>-cloudinit Secret: createSecret, findSecret, updateSecret
    verbs: ['get', 'create', 'update'],
    scope: 'namespace',
    usedFor: 'cloud-init Secrets (user data over 2048 bytes, --harvester-cloud-init-in-secret)',
  },
  {
    group: '',
    resource: 'configmaps',
    // the address claims of --harvester-ip-pool-info: listConfigMaps, findConfigMap,
    // createConfigMap, setConfigMapOwner (patch), deleteConfigMap
    verbs: ['get', 'list', 'create', 'patch', 'delete'],
    scope: 'namespace',
    usedFor:
      'fixed addresses from --harvester-ip-pool-info (one claim per address; not needed without that flag)',
    optional: true,
  },
  {
    group: 'network.harvesterhci.io',
    resource: 'virtualmachinenetworkconfigs',
    // the wait for the address Harvester's IP pool binds to the VM's MAC; the pre-create check names holders
    verbs: ['get', 'list', 'watch'],
    scope: 'namespace',
    usedFor: "--harvester-ip-pool-info on a network Harvester's IP pool (vm-dhcp-controller) serves",
    optional: true,
  },
  {
    group: 'network.harvesterhci.io',
    resource: 'ippools',
    // findVmDhcpIpPool in the pre-create check (skipped with a warning without it)
    verbs: ['get'],
    scope: 'namespace',
    usedFor: 'the pre-create check of a Harvester IP pool (skipped with a warning without it)',
    optional: true,
  },
  {
    group: 'harvesterhci.io',
    resource: 'settings',
    verbs: ['get'],
    scope: 'cluster',
    usedFor: 'the pre-create check (setting server-version)',
  },
  {
    group: 'harvesterhci.io',
    resource: 'virtualmachineimages',
    verbs: ['get'],
    scope: 'namespace',
    usedFor: 'the pre-create check and boot disks (the image storage class)',
  },
  {
    group: 'harvesterhci.io',
    resource: 'keypairs',
    verbs: ['get'],
    scope: 'namespace',
    usedFor: '--harvester-key-pair-name',
  },
  {
    group: 'k8s.cni.cncf.io',
    resource: 'network-attachment-definitions',
    verbs: ['get'],
    scope: 'namespace',
    usedFor: 'the pre-create check of the networks',
  },
  {
    group: 'storage.k8s.io',
    resource: 'storageclasses',
    verbs: ['get'],
    scope: 'cluster',
    usedFor: 'the pre-create check of --harvester-disk-info storage classes',
  },
  ...(['pcidevices', 'pcideviceclaims', 'usbdevices'] as const).map((resource): AccessNeed => ({
    group: 'devices.harvesterhci.io',
    resource,
    // listAll in the pre-create check of --harvester-host-device-info
    verbs: ['list'],
    scope: 'cluster',
    usedFor: 'the pre-create check of --harvester-host-device-info (skipped with a warning without it)',
    optional: true,
  })),
];

/** "virtualmachines.kubevirt.io", "virtualmachines/{start,stop,restart}.subresources.kubevirt.io", "secrets". */
export function resourceLabel(need: AccessNeed): string {
  const sub = need.subresources ? `/{${need.subresources.join(',')}}` : '';
  return `${need.resource}${sub}${need.group ? `.${need.group}` : ''}${need.by ? ` for ${need.by}` : ''}`;
}
