// Which cloud credential reaches a machine's VM. Rancher's own handler uses only the cluster's
// (docs/upstream/rancher.md#cleanup-handler), so a cluster whose pools carry their own credential
// loops on errors. Here: the machine pool's credential, else the cluster's, then what the
// machine itself recorded; later candidates are fallbacks, used only for the same
// Harvester cluster as the first one that exists.
import { CLOUD_CREDENTIAL_NAMESPACE } from '../../rancher/cloud-credential.js';
import { LABEL_CAPI_DEPLOYMENT, LABEL_RKE_MACHINE_POOL } from '../../rancher/labels.js';
import { machineDeploymentName } from '../../rancher/names.js';
import type { HarvesterMachine, MachinePool, ProvisioningCluster } from './types.js';
import { keyText } from '../../api/object-key.js';

export interface SecretRef {
  namespace: string;
  name: string;
}

/** "cattle-global-data:cc-abc" → that Secret; a bare name is in the cluster's namespace (Rancher's rule). */
export function parseCredentialRef(
  ref: string | null | undefined,
  defaultNamespace: string,
): SecretRef | undefined {
  const value = ref?.trim();
  if (!value) return undefined;
  const colon = value.indexOf(':');
  if (colon > 0 && colon < value.length - 1)
    return { namespace: value.slice(0, colon), name: value.slice(colon + 1) };
  return { namespace: defaultNamespace || CLOUD_CREDENTIAL_NAMESPACE, name: value.replace(/^:/, '') };
}

export const formatSecretRef = (r: SecretRef): string => keyText(r.namespace, r.name);

export interface PoolMatch {
  pool: MachinePool;
  /** How the machine was linked to its pool, for Events and the status summary. */
  matchedBy: string;
}

/**
 * Rancher links a CAPI Machine to its pool through labels it sets on the MachineDeployment
 * template: `rke.cattle.io/rke-machine-pool-name` = pool name and
 * `cluster.x-k8s.io/deployment-name` = SafeConcatName(cluster, pool). The machine name
 * `<cluster>-<pool>-<hash>-<random>` is the last resort.
 */
export function findMachinePool(input: {
  cluster: ProvisioningCluster | undefined;
  machineLabels: Record<string, string> | undefined;
  machineName: string;
}): PoolMatch | undefined {
  const pools = input.cluster?.spec?.rkeConfig?.machinePools ?? [];
  const clusterName = input.cluster?.metadata.name ?? '';
  const labels = input.machineLabels ?? {};
  const byPoolLabel = labels[LABEL_RKE_MACHINE_POOL];
  if (byPoolLabel !== undefined) {
    const pool = pools.find((p) => p.name === byPoolLabel);
    if (pool) return { pool, matchedBy: `label ${LABEL_RKE_MACHINE_POOL}=${byPoolLabel}` };
  }
  const deployment = labels[LABEL_CAPI_DEPLOYMENT];
  if (deployment !== undefined) {
    const pool = pools.find((p) => machineDeploymentName(clusterName, p.name) === deployment);
    if (pool) return { pool, matchedBy: `label ${LABEL_CAPI_DEPLOYMENT}=${deployment}` };
  }
  // Longest pool name first: pool "a" must not claim machines of pool "a-b".
  const byPrefix = [...pools]
    .sort((x, y) => y.name.length - x.name.length)
    .find((p) => input.machineName.startsWith(`${clusterName}-${p.name}-`));
  return byPrefix
    ? { pool: byPrefix, matchedBy: `machine name prefix ${clusterName}-${byPrefix.name}-` }
    : undefined;
}

export interface CredentialCandidate {
  ref: SecretRef;
  /** "machine pool pool1", "cluster", ... */
  source: string;
}

export function credentialCandidates(input: {
  cluster: ProvisioningCluster | undefined;
  pool: MachinePool | undefined;
  harvesterMachine: HarvesterMachine | undefined;
}): CredentialCandidate[] {
  const namespace = input.cluster?.metadata.namespace ?? input.harvesterMachine?.metadata.namespace ?? '';
  const raw: Array<[string | null | undefined, string]> = [
    [input.pool?.cloudCredentialSecretName, `machine pool ${input.pool?.name ?? ''}`],
    [input.cluster?.spec?.cloudCredentialSecretName, 'cluster'],
    [input.harvesterMachine?.spec?.common?.cloudCredentialSecretName, 'HarvesterMachine spec.common'],
    [input.harvesterMachine?.status?.cloudCredentialSecretName, 'HarvesterMachine status'],
    [input.cluster?.status?.cloudCredentialSecretName, 'cluster status'],
  ];
  const seen = new Set<string>();
  const out: CredentialCandidate[] = [];
  for (const [value, source] of raw) {
    const ref = parseCredentialRef(value, namespace);
    if (!ref || seen.has(formatSecretRef(ref))) continue;
    seen.add(formatSecretRef(ref));
    out.push({ ref, source });
  }
  return out;
}

/**
 * The candidates worth trying, in order: the first one whose Secret exists, then the
 * others that point at the same Harvester cluster (never a credential of another one:
 * the VM of that name there is not ours). `harvesterClusterIdOf` answers null for a
 * Secret that does not exist, undefined for one without a cluster id.
 */
export function usableCandidates<T extends CredentialCandidate>(
  candidates: readonly T[],
  harvesterClusterIdOf: (c: T) => string | undefined | null,
): T[] {
  const existing = candidates.filter((c) => harvesterClusterIdOf(c) !== null);
  const first = existing[0];
  if (!first) return [];
  const id = harvesterClusterIdOf(first);
  return existing.filter((c) => c === first || (id !== undefined && harvesterClusterIdOf(c) === id));
}
