// The names real Harvester, KubeVirt, Longhorn and the Harvester CSI driver put on the
// objects they manage (docs/upstream/harvester-kubevirt.md#names-and-finalizers; harvester
// v1.8.0 pkg/util/constants.go, kubevirt.io/api v1.7.0 core/v1/types.go). The stand-ins write
// these and nothing else.
import type { ResourceType } from '../../src/kube/resources.js';

export const Annotations = {
  volumeClaimTemplates: 'harvesterhci.io/volumeClaimTemplates',
  removedPersistentVolumeClaims: 'harvesterhci.io/removedPersistentVolumeClaims',
  imageId: 'harvesterhci.io/imageId',
  vmRunStrategy: 'harvesterhci.io/vmRunStrategy',
  macAddress: 'harvesterhci.io/mac-address',
  isDefaultStorageClass: 'storageclass.kubernetes.io/is-default-class',
  isReservedStorageClass: 'harvesterhci.io/is-reserved-storageclass',
  /** Set by KubeVirt's VM controller on the VMI it creates: the VM generation it was made from. */
  vmGeneration: 'kubevirt.io/vm-generation',
  latestObservedApiVersion: 'kubevirt.io/latest-observed-api-version',
  storageObservedApiVersion: 'kubevirt.io/storage-observed-api-version',
  launcherDomain: 'kubevirt.io/domain',
  defaultContainer: 'kubectl.kubernetes.io/default-container',
} as const;

export const Labels = {
  guestCluster: 'guestcluster.harvesterhci.io/name',
  maintainModeStrategy: 'harvesterhci.io/maintain-mode-strategy',
  imageDisplayName: 'harvesterhci.io/imageDisplayName',
  /** On VMIs once scheduled, and on virt-launcher pods. */
  nodeName: 'kubevirt.io/nodeName',
  kubevirtApp: 'kubevirt.io',
  createdBy: 'kubevirt.io/created-by',
  vmName: 'vm.kubevirt.io/name',
} as const;

export const Finalizers = {
  /** wrangler's OnRemove handler "VMController.CleanupPVCAndSnapshot". */
  harvesterVmCleanup: 'wrangler.cattle.io/VMController.CleanupPVCAndSnapshot',
  /** wrangler's OnRemove handler "persistentvolumeclaim-controller": on every PVC. */
  harvesterPvc: 'wrangler.cattle.io/persistentvolumeclaim-controller',
  /** wrangler's OnRemove handler "VMController.BackfillObservedNetworkMacAddress": on every VMI. */
  harvesterVmiMacBackfill: 'wrangler.cattle.io/VMController.BackfillObservedNetworkMacAddress',
  /** wrangler's OnRemove handler "vm-image-controller": deletes the image's StorageClass. */
  harvesterImage: 'wrangler.cattle.io/vm-image-controller',
  kubevirtVmController: 'kubevirt.io/virtualMachineControllerFinalize',
  /** Added to every VMI by virt-api's mutating webhook; removed once the launcher pods are gone. */
  kubevirtVmiForegroundDelete: 'kubevirt.io/foregroundDeleteVirtualMachine',
  pvcProtection: 'kubernetes.io/pvc-protection',
} as const;

export const LONGHORN_PROVISIONER = 'driver.longhorn.io';
export const DEFAULT_STORAGE_CLASS = 'harvester-longhorn';
/** The one node the sandbox pretends to have (no Node object, no kubelet: see pods.ts). */
export const SANDBOX_NODE = 'harvester-sandbox-node-0';
export const LAUNCHER_IMAGE = 'kubevirt/virt-launcher:v1.7.0';

const core = (plural: string, kind: string, namespaced = true): ResourceType => ({
  group: '',
  version: 'v1',
  plural,
  kind,
  namespaced,
});

/** Kinds the stand-ins need beyond src/kube's Resources. */
export const ExtraResources = {
  pod: core('pods', 'Pod'),
} as const;
