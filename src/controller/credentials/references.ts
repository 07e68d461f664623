// Who references which cloud credential: clusters, their machine pools, and machines (the
// credential a HarvesterMachine recorded is what Rancher's removal job will use).
import { keyOf, keyText } from '../../api/object-key.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../rancher/labels.js';
import { parseCredentialRef, type SecretRef } from '../common/credential-choice.js';
import type { CredentialReference } from './credential-health.js';
import type { HarvesterMachine, ProvisioningCluster } from '../common/types.js';

export interface ClusterReferences {
  cluster: { namespace: string; name: string };
  clusterCredential: SecretRef | undefined;
  references: CredentialReference[];
}

export function collectReferences(
  clusters: readonly ProvisioningCluster[],
  machines: readonly HarvesterMachine[],
): ClusterReferences[] {
  const byCluster = new Map<string, ClusterReferences>();
  for (const c of clusters) {
    const cluster = keyOf(c);
    const clusterCredential = parseCredentialRef(c.spec?.cloudCredentialSecretName, cluster.namespace);
    const references: CredentialReference[] = [];
    if (clusterCredential)
      references.push({
        referrer: `cluster ${keyText(cluster.namespace, cluster.name)}`,
        cluster,
        credential: clusterCredential,
      });
    (c.spec?.rkeConfig?.machinePools ?? []).forEach((pool, poolIndex) => {
      const credential = parseCredentialRef(pool.cloudCredentialSecretName, cluster.namespace);
      if (credential)
        references.push({
          referrer: `machine pool ${pool.name} of ${keyText(cluster.namespace, cluster.name)}`,
          cluster,
          credential,
          poolIndex,
        });
    });
    byCluster.set(keyText(cluster.namespace, cluster.name), { cluster, clusterCredential, references });
  }
  for (const m of machines) {
    const namespace = m.metadata.namespace ?? '';
    const entry = byCluster.get(keyText(namespace, m.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME]));
    const credential = parseCredentialRef(m.spec?.common?.cloudCredentialSecretName, namespace);
    if (!entry || !credential) continue;
    entry.references.push({
      referrer: `HarvesterMachine ${keyText(namespace, m.metadata.name)}`,
      cluster: entry.cluster,
      credential,
      machine: keyOf(m),
    });
  }
  return [...byCluster.values()];
}
