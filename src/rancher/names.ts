// Names Rancher derives for machines, so that the controller looks for a VM where Rancher
// put it. Rancher (machineprovision getInstanceName) names the rancher-machine instance,
// and so the Harvester VM, SafeConcatName(<infra machine name with '.' -> '-'>): names of
// 64 characters or more are cut and suffixed with a hash, and a lookup by the plain
// machine name misses them (docs/upstream/rancher.md#machine-names).
import { createHash } from 'node:crypto';

/** wrangler's name.SafeConcatName: joined with '-', under 64 characters, distinct by a sha256 suffix. */
export function safeConcatName(...parts: string[]): string {
  const full = parts.join('-');
  if (full.length < 64) return full;
  const digest = createHash('sha256').update(full, 'utf8').digest('hex');
  // The cut may end on a character a name cannot end with; then one more is cut.
  const c = full.charAt(56);
  return /[a-z0-9]/.test(c)
    ? `${full.slice(0, 57)}-${digest.slice(0, 5)}`
    : `${full.slice(0, 56)}-${digest.slice(0, 6)}`;
}

/** The VM name Rancher's rm job passes to the driver for an infra machine. */
export function rancherInstanceName(machineName: string): string {
  return safeConcatName(machineName.replaceAll('.', '-'));
}

/** Rancher's MachineDeployment name for a pool: SafeConcatName(cluster, pool). */
export function machineDeploymentName(clusterName: string, poolName: string): string {
  return safeConcatName(clusterName, poolName);
}

/**
 * The Secret holding a guest cluster's admin kubeconfig, in the cluster's namespace: Cluster API
 * reads it by this name (util/secret: `<cluster>-kubeconfig`, key `value`) and Rancher writes it
 * for every provisioned cluster (docs/upstream/cluster-api.md#the-guest-clusters-kubeconfig).
 */
export const guestKubeconfigSecretName = (cluster: string): string => `${cluster}-kubeconfig`;
export const GUEST_KUBECONFIG_KEY = 'value';
