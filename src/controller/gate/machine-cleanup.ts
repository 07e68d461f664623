// The cleanup itself, for one Machine of a cluster being deleted: choose the credential
// (credential-choice.ts), reach Harvester with it, annotate the VM (machine-vm-annotation.ts),
// falling back to other credentials of the same Harvester cluster when one is rejected.
// attemptCleanup is what the reconciler calls: it never throws and never outlasts the
// time it was given, so every attempt ends in an outcome the gate's deadline applies to.
import { objectKey, type ObjectKey } from '../../api/object-key.js';
import { UNSEEN_CREDENTIAL_HINT } from '../constants.js';
import { formatDuration } from '../../common/durations.js';
import { isCredentialRejected } from '../../kube/index.js';
import { redact } from '../../log/redact.js';
import { harvesterClusterId } from '../../rancher/cloud-credential.js';
import type { Cache } from '../common/caches.js';
import {
  credentialCandidates,
  findMachinePool,
  formatSecretRef,
  usableCandidates,
} from '../common/credential-choice.js';
import type { CleanupOutcome } from './gate-decision.js';
import { describeFailure, type FailureReason } from '../common/failure.js';

export { describeFailure };
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { annotateMachineVm } from './machine-vm-annotation.js';
import type { CapiMachine, HarvesterMachine, ProvisioningCluster, SecretObject } from '../common/types.js';

export interface CleanupDeps {
  /** The cache of the credential namespace: Rancher keeps every cloud credential there, and the controller may read no other Secret. */
  credentials: Cache<SecretObject>;
  harvester: HarvesterClients;
  onCredentialRejected: (secretKey: ObjectKey) => void;
  now: number;
}

export interface CleanupInput {
  machine: CapiMachine;
  harvesterMachine: HarvesterMachine;
  cluster: ProvisioningCluster | undefined;
  clusterName: string;
}

/**
 * One cleanup attempt that always settles within `timeoutMs` with an outcome: whatever is
 * thrown becomes a failure with a reason, and an attempt still waiting on Harvester when
 * the time is up is a failure too (its requests end by their own deadlines; an annotation
 * that lands afterwards does no harm).
 */
export async function attemptCleanup(
  deps: CleanupDeps,
  input: CleanupInput,
  timeoutMs: number,
): Promise<CleanupOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<CleanupOutcome>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          kind: 'failed',
          reason: 'HarvesterUnreachable',
          message: `no answer from Harvester within ${formatDuration(timeoutMs)}, the time left before the gate's deadline`,
        }),
      Math.max(0, timeoutMs),
    );
  });
  const attempt = cleanUpMachineVm(deps, input).catch((err: unknown): CleanupOutcome => ({
    kind: 'failed',
    reason: 'HarvesterError',
    message: `cleanup failed: ${redact(err instanceof Error ? err.message : String(err))}`,
  }));
  try {
    return await Promise.race([attempt, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

export async function cleanUpMachineVm(deps: CleanupDeps, input: CleanupInput): Promise<CleanupOutcome> {
  const { machine, harvesterMachine: hm, cluster, clusterName } = input;
  const pool = findMachinePool({
    cluster,
    machineLabels: { ...hm.metadata.labels, ...machine.metadata.labels },
    machineName: hm.metadata.name,
  });
  const candidates = credentialCandidates({ cluster, pool: pool?.pool, harvesterMachine: hm });
  const resolved = candidates.map((c) => ({
    ...c,
    secret: deps.credentials.get(c.ref),
  }));
  const usable = usableCandidates(resolved, (c) =>
    c.secret ? (harvesterClusterId(c.secret) ?? undefined) : null,
  );
  if (usable.length === 0) {
    const tried =
      candidates.map((c) => `${formatSecretRef(c.ref)} (${c.source})`).join(', ') || 'none configured';
    return {
      kind: 'failed',
      reason: 'HarvesterCredentialMissing',
      message: `no Harvester cloud credential Secret found; tried ${tried} (${UNSEEN_CREDENTIAL_HINT})`,
    };
  }
  const failures: Array<{ reason: FailureReason; message: string }> = [];
  for (const c of usable) {
    const label = `cloud credential ${c.ref.namespace}:${c.ref.name} (${c.source})`;
    try {
      const client = c.secret ? deps.harvester.forSecret(c.secret) : undefined;
      if (!client) {
        failures.push({ reason: 'HarvesterCredentialMissing', message: `${label} holds no kubeconfig` });
        continue;
      }
      return await annotateMachineVm(client, {
        vmNamespace: hm.spec?.vmNamespace || 'default',
        machineName: hm.metadata.name,
        clusterName,
      });
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
