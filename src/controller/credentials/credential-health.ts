// What a Harvester cloud credential's expiry means now, and the exact fix when a machine
// or pool still points at an expired credential while its cluster has a valid one for the
// same Harvester cluster (docs/upstream/seeds.md#second-report: Terraform switched the cluster to a new
// credential; old machines kept the old one and could not be removed).
import { formatDuration } from '../../common/durations.js';
import { CREDENTIAL_KEY_KUBECONFIG } from '../../rancher/cloud-credential.js';
import type { SecretRef } from '../common/credential-choice.js';
import type { ObjectKey } from '../../api/object-key.js';

export type CredentialState = 'valid' | 'expiring-soon' | 'expired' | 'rejected' | 'invalid' | 'unknown';
/** 'invalid': the kubeconfig itself cannot be used, so nothing was sent. */
export type ProbeResult = 'ok' | 'rejected' | 'invalid' | 'unreachable' | 'not-probed';

export interface CredentialHealth {
  state: CredentialState;
  expiresAt?: Date;
  detail: string;
}

/**
 * A probe through the credential is the truth when there is one (a token can be revoked
 * before its expiry, or renewed with a stale annotation); the annotation predicts
 * "expiring soon" and decides when the probe could not reach Harvester.
 */
export function classifyCredential(input: {
  expiresAt: Date | undefined;
  probe: ProbeResult;
  /** With probe 'invalid': what is wrong with the kubeconfig ("kubeconfig has no current-context"). */
  problem?: string;
  now: Date;
  expiringSoonMs: number;
}): CredentialHealth {
  const { expiresAt, probe, now } = input;
  const left = expiresAt ? expiresAt.getTime() - now.getTime() : undefined;
  const at = expiresAt ? { expiresAt } : {};
  if (probe === 'invalid')
    return { state: 'invalid', ...at, detail: `cannot be used: ${input.problem ?? 'unusable kubeconfig'}` };
  if (probe === 'rejected') {
    return left !== undefined && left <= 0
      ? { state: 'expired', ...at, detail: `expired at ${expiresAt?.toISOString()}; Harvester rejects it` }
      : { state: 'rejected', ...at, detail: 'Harvester rejects it (revoked, deleted or expired token)' };
  }
  if (left === undefined) {
    return probe === 'ok'
      ? { state: 'valid', detail: 'accepted by Harvester; no expiry recorded (non-expiring token)' }
      : {
          state: 'unknown',
          detail: `no expiry recorded and ${probe === 'unreachable' ? 'Harvester unreachable' : 'not probed'}`,
        };
  }
  if (left <= 0) {
    return probe === 'ok'
      ? {
          state: 'valid',
          ...at,
          detail: `accepted by Harvester although annotated as expired at ${expiresAt?.toISOString()}`,
        }
      : { state: 'expired', ...at, detail: `expired at ${expiresAt?.toISOString()}` };
  }
  if (left <= input.expiringSoonMs) {
    return {
      state: 'expiring-soon',
      ...at,
      detail: `expires at ${expiresAt?.toISOString()} (in ${formatDuration(left)})`,
    };
  }
  return { state: 'valid', ...at, detail: `valid until ${expiresAt?.toISOString()}` };
}

export const isBad = (s: CredentialState | undefined): boolean => s === 'expired' || s === 'rejected';

export interface CredentialReference {
  /** "machine pool pool1 of fleet-default/c1", "HarvesterMachine fleet-default/m1" */
  referrer: string;
  cluster: { namespace: string; name: string };
  credential: SecretRef;
  /** For a pool: its index in spec.rkeConfig.machinePools, to patch it. */
  poolIndex?: number;
  /** For a HarvesterMachine: its key (its Events go to it). */
  machine?: ObjectKey;
}

export interface MismatchReport {
  referrer: string;
  cluster: { namespace: string; name: string };
  expired: SecretRef;
  valid: SecretRef;
  harvesterClusterId: string;
  /** Every command, for the status summary. */
  fix: string;
  /** What fits an Event (1 KiB): renew, and the pool patch when there is one. */
  shortFix: string;
}

/** The expired/valid pairs for one cluster; `lookup` gives each credential's state and Harvester cluster. */
export function findCredentialMismatches(input: {
  clusterCredential: SecretRef | undefined;
  references: readonly CredentialReference[];
  lookup: (ref: SecretRef) => { state: CredentialState; harvesterClusterId?: string } | undefined;
}): MismatchReport[] {
  const valid = input.clusterCredential;
  const validInfo = valid ? input.lookup(valid) : undefined;
  if (
    !valid ||
    !validInfo ||
    isBad(validInfo.state) ||
    validInfo.state === 'unknown' ||
    !validInfo.harvesterClusterId
  )
    return [];
  const out: MismatchReport[] = [];
  for (const r of input.references) {
    const info = input.lookup(r.credential);
    if (!info || !isBad(info.state) || info.harvesterClusterId !== validInfo.harvesterClusterId) continue;
    out.push({
      referrer: r.referrer,
      cluster: r.cluster,
      expired: r.credential,
      valid,
      harvesterClusterId: validInfo.harvesterClusterId,
      ...mismatchFix(r, valid),
    });
  }
  return out;
}

function mismatchFix(r: CredentialReference, valid: SecretRef): { fix: string; shortFix: string } {
  const { namespace: ns, name } = r.credential;
  const copy =
    `kubectl -n ${valid.namespace} get secret ${valid.name} -o jsonpath='{.data.${CREDENTIAL_KEY_KUBECONFIG}}' ` +
    `| xargs -I{} kubectl -n ${ns} patch secret ${name} --type merge -p '{"data":{"${CREDENTIAL_KEY_KUBECONFIG}":"{}"}}'`;
  const renew =
    `Renew cloud credential ${ns}:${name} in Rancher (Cluster Management > Cloud Credentials > ${name} > Renew); ` +
    `existing machines keep referencing it, so switching the cluster to another credential does not help them.`;
  const pool =
    r.poolIndex === undefined
      ? []
      : [
          `Then point the pool at the valid credential for new machines: kubectl -n ${r.cluster.namespace} patch clusters.provisioning.cattle.io ${r.cluster.name} ` +
            `--type json -p '[{"op":"replace","path":"/spec/rkeConfig/machinePools/${r.poolIndex}/cloudCredentialSecretName","value":"${valid.namespace}:${valid.name}"}]'`,
        ];
  const copyStep = `Or copy the kubeconfig of the valid credential ${valid.namespace}:${valid.name} (same Harvester cluster) into it: ${copy}`;
  return { fix: [renew, copyStep, ...pool].join(' '), shortFix: [renew, ...pool].join(' ') };
}
