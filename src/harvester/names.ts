// Names derived from the machine name. Rancher names machines
// `<cluster>-<pool>-<machine-set hash>-<random>`; the Go driver reads the pool and machine
// set back out of that shape, and so must we, character for character.

import { formatLabelValue, isValidLabelValue } from './labels.js';
import { parseKey } from '../api/object-key.js';

/**
 * The `harvesterhci.io/machineSetName` label value: `<namespace>-` + the machine name
 * without its last two `-` segments, hashed when not a valid label value.
 * ("default", "mycluster-pool1-7f8d9c5b6-x2v9q") → "default-mycluster-pool1".
 * A name with fewer than two dashes loses everything after the namespace, as in Go.
 */
export function machineSetName(vmNamespace: string, machineName: string): string {
  const segments = [vmNamespace, ...machineName.split('-')];
  return formatLabelValue(segments.slice(0, Math.max(0, segments.length - 2)).join('-'));
}

/**
 * The `nodepool.harvesterhci.io/name` label value: the machine name without its last
 * `-segment`, without the cluster-name prefix and the dashes after it.
 * ("mycluster-pool1-7f8d9c5b6-x2v9q", "mycluster") → "pool1-7f8d9c5b6".
 * Two differences from Go, both where Go fails: a name without a dash is kept whole (Go
 * panics), and a result that is not a valid label value is hashed (the API server would
 * reject the VM).
 */
export function nodePoolName(machineName: string, clusterName: string): string {
  const lastDash = machineName.lastIndexOf('-');
  let pool = lastDash >= 0 ? machineName.slice(0, lastDash) : machineName;
  // A plain string prefix, as Go's strings.TrimPrefix: not aligned to `-` segments.
  if (clusterName !== '' && pool.startsWith(clusterName)) pool = pool.slice(clusterName.length);
  pool = pool.replace(/^-+/, '');
  return isValidLabelValue(pool) ? pool : formatLabelValue(pool);
}

/** Volume/disk name of disk-info entry i (`disk-<i>`); the legacy single disk is `disk-1`. */
export function diskName(index: number): string {
  return `disk-${index}`;
}

/** Interface/network name of network-info entry i (`nic-<i>`); the legacy single NIC is `nic-0`. */
export function nicName(index: number): string {
  return `nic-${index}`;
}

/** The PVC of a disk: `<vm>-<disk>-<5 random lowercase alphanumerics>`, as Harvester's builder. */
export function pvcName(vmName: string, disk: string, random: string): string {
  return `${vmName}-${disk}-${random}`;
}

export const CLOUD_INIT_DISK_NAME = 'cloudinitdisk';

/** The Secret holding cloud-init data that is too large (or asked) to be inline. */
export function cloudInitSecretName(vmName: string): string {
  return `${vmName}-cloudinit`;
}

/** Splits "ns/name" or "name" (namespace defaulting), as the Go driver's NamespacedNamePartsByDefault. */
export function namespacedName(value: string, defaultNamespace: string): { namespace: string; name: string } {
  const key = parseKey(value);
  return { namespace: key.namespace || defaultNamespace, name: key.name };
}
