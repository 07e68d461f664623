// Label, annotation and finalizer names that Harvester, KubeVirt, Rancher and the Go driver
// agree on (Rancher's and Cluster API's own names are in rancher/labels.ts). A typo here
// silently breaks cleanup or affinity, so each lives in one place.

/** Value of LABEL_CREATOR on everything the driver creates; the Go driver's, so both drivers' VMs match. */
export const CREATOR = 'docker-machine-driver-harvester';

// ---- labels (on the VM and its template) ----
export const LABEL_CREATOR = 'harvesterhci.io/creator';
export const LABEL_VM_NAME = 'harvesterhci.io/vmName';
export const LABEL_MACHINE_SET_NAME = 'harvesterhci.io/machineSetName';
export const LABEL_GUEST_CLUSTER_NAME = 'guestcluster.harvesterhci.io/name';
export const LABEL_NODE_POOL_NAME = 'nodepool.harvesterhci.io/name';

// ---- annotations ----
export const ANNOTATION_SSH_NAMES = 'harvesterhci.io/sshNames';
export const ANNOTATION_WAIT_FOR_LEASE_INTERFACE_NAMES = 'harvesterhci.io/waitForLeaseInterfaceNames';
export const ANNOTATION_VOLUME_CLAIM_TEMPLATES = 'harvesterhci.io/volumeClaimTemplates';
export const ANNOTATION_IMAGE_ID = 'harvesterhci.io/imageId';
export const ANNOTATION_RESERVED_MEMORY = 'harvesterhci.io/reservedMemory';
export const ANNOTATION_VM_RUN_STRATEGY = 'harvesterhci.io/vmRunStrategy';
/** Set to "true" by Rancher on every VM of a guest cluster that is being deleted as a whole. */
export const ANNOTATION_REMOVE_ALL_PVCS = 'harvesterhci.io/removeAllPersistentVolumeClaims';
/** Comma-separated PVC names that Harvester deletes when the VM is removed. */
export const ANNOTATION_REMOVED_PVCS = 'harvesterhci.io/removedPersistentVolumeClaims';
/** Opt-out of Rancher's whole-cluster cleanup, on the CAPI or the provisioning cluster. */
export const ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP =
  'harvesterhci.io/skipHarvesterMachineProvisionCleanup';

// ---- finalizers ----
export const FINALIZER_KUBEVIRT_VM = 'kubevirt.io/virtualMachineControllerFinalize';
export const FINALIZER_HARVESTER_VM_CLEANUP = 'wrangler.cattle.io/VMController.CleanupPVCAndSnapshot';
export const FINALIZER_HARVESTER_PVC = 'wrangler.cattle.io/persistentvolumeclaim-controller';
export const FINALIZER_PVC_PROTECTION = 'kubernetes.io/pvc-protection';
export const FINALIZER_FOREGROUND_DELETION = 'foregroundDeletion';

const MAX_LABEL_VALUE_LENGTH = 63;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** Kubernetes' rule for label values: at most 63 characters, alphanumerics with - _ . inside. */
export function isValidLabelValue(value: string): boolean {
  return value.length <= MAX_LABEL_VALUE_LENGTH && LABEL_VALUE.test(value);
}

/** 32-bit FNV-1a over the bytes. */
function fnv1a32(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * A label value for any string: itself when it is a valid label value, else
 * `hash_<h>_z` with h = base64url (no padding) of the big-endian 32-bit FNV-1a of its
 * UTF-8 bytes, the scheme of cluster-api's MachineSet labels that the Go driver adopted.
 * Both drivers must produce the same value, or machines of one pool stop matching each
 * other's affinity terms.
 */
export function formatLabelValue(value: string): string {
  if (isValidLabelValue(value)) return value;
  const sum = Buffer.alloc(4);
  sum.writeUInt32BE(fnv1a32(Buffer.from(value, 'utf8')));
  return `hash_${sum.toString('base64url')}_z`;
}
