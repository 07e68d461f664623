// Where a guest cluster's VMs are on Harvester and which credential reaches them, as its
// HarvesterMachines tell (each machine's VM namespace and credential candidates, in
// credential-choice.ts's order), and the one way to act there: the candidates tried in order,
// falling back only within one Harvester cluster, each failure described as the gate
// describes it. The load balancer and volume cleanups and the ownership recorder all reach
// Harvester this way, so a cluster's leftovers are handled with its own credential.
import { objectKey, type ObjectKey } from '../../api/object-key.js';
import { isCredentialRejected, type KubeClient } from '../../kube/index.js';
import { harvesterClusterId } from '../../rancher/cloud-credential.js';
import { BY_CLUSTER, clusterIndexKey, type RancherCaches } from './caches.js';
import { UNSEEN_CREDENTIAL_HINT } from '../constants.js';
import {
  credentialCandidates,
  findMachinePool,
  formatSecretRef,
  usableCandidates,
  type CredentialCandidate,
} from './credential-choice.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { describeFailure, type FailureReason } from './failure.js';

export interface ClusterTarget {
  vmNamespace: string;
  candidates: CredentialCandidate[];
}

/** Adds the cluster's targets as its HarvesterMachines are now (one per namespace and candidate list). */
export function learnTargets(
  caches: Pick<RancherCaches, 'harvesterMachines' | 'provisioningClusters'>,
  namespace: string,
  cluster: string,
  into: Map<string, ClusterTarget> = new Map(),
): Map<string, ClusterTarget> {
  const prov = caches.provisioningClusters.get(objectKey(namespace, cluster));
  const machines = caches.harvesterMachines.byIndex(BY_CLUSTER, clusterIndexKey(namespace, cluster));
  for (const hm of machines) {
    const pool = findMachinePool({
      cluster: prov,
      machineLabels: hm.metadata.labels,
      machineName: hm.metadata.name,
    });
    const candidates = credentialCandidates({ cluster: prov, pool: pool?.pool, harvesterMachine: hm });
    const vmNamespace = hm.spec?.vmNamespace || 'default';
    const id = `${vmNamespace}|${candidates.map((c) => formatSecretRef(c.ref)).join(',')}`;
    if (!into.has(id)) into.set(id, { vmNamespace, candidates });
  }
  return into;
}

export type TargetFailure = { kind: 'failed'; reason: FailureReason; message: string };

/**
 * Runs `act` with the first usable candidate's client; on a failure the next candidate of the
 * same Harvester cluster. Never throws for what a credential or Harvester does: that becomes a
 * failure naming each credential tried (a rejected one is reported through onCredentialRejected).
 */
export async function withTargetClient<T>(
  deps: {
    caches: Pick<RancherCaches, 'credentials'>;
    harvester: HarvesterClients;
    onCredentialRejected: (secretKey: ObjectKey) => void;
    now: number;
  },
  target: ClusterTarget,
  what: string,
  act: (client: KubeClient) => Promise<T>,
): Promise<T | TargetFailure> {
  const resolved = target.candidates.map((c) => ({ ...c, secret: deps.caches.credentials.get(c.ref) }));
  const usable = usableCandidates(resolved, (c) =>
    c.secret ? (harvesterClusterId(c.secret) ?? undefined) : null,
  );
  if (usable.length === 0)
    return {
      kind: 'failed',
      reason: 'HarvesterCredentialMissing',
      message: `no Harvester cloud credential Secret found for ${what} in ${target.vmNamespace}; tried ${target.candidates.map((c) => `${formatSecretRef(c.ref)} (${c.source})`).join(', ') || 'none configured'} (${UNSEEN_CREDENTIAL_HINT})`,
    };
  const failures: Array<{ reason: FailureReason; message: string }> = [];
  for (const c of usable) {
    const label = `cloud credential ${c.ref.namespace}:${c.ref.name} (${c.source})`;
    try {
      const client = c.secret ? deps.harvester.forSecret(c.secret) : undefined;
      if (!client) {
        failures.push({ reason: 'HarvesterCredentialMissing', message: `${label} holds no kubeconfig` });
        continue;
      }
      return await act(client);
    } catch (err) {
      failures.push(describeFailure(err, label, c.secret, deps.now));
      if (isCredentialRejected(err)) deps.onCredentialRejected(objectKey(c.ref.namespace, c.ref.name));
    }
  }
  const rejected = failures.find((f) => f.reason === 'HarvesterCredentialRejected');
  return {
    kind: 'failed',
    reason: (rejected ?? failures[0])?.reason ?? 'HarvesterError',
    message: failures.map((f) => f.message).join('; '),
  };
}
