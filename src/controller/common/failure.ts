// Why reaching Harvester with a credential failed, in the words every controller's Events and
// status use: one reason per kind of failure, and a message that says what to do.
import { KubeError } from '../../kube/index.js';
import { KubeconfigError } from '../../kube/kubeconfig-content.js';
import { expiryFromAnnotation } from '../../rancher/cloud-credential.js';
import type { SecretObject } from './types.js';

/** Why a cleanup could not reach Harvester or act there. */
export type FailureReason =
  | 'HarvesterCredentialRejected'
  | 'HarvesterCredentialMissing'
  /** The credential's kubeconfig cannot be used at all (not YAML, no current context, ...). */
  | 'HarvesterCredentialInvalid'
  | 'HarvesterUnreachable'
  | 'HarvesterVMAmbiguous'
  | 'HarvesterError';

/** A failure a person can act on: which credential, whose token, since when, what to do. */
export function describeFailure(
  err: unknown,
  label: string,
  secret: SecretObject | undefined,
  now: number,
): { reason: FailureReason; message: string } {
  if (err instanceof KubeconfigError)
    return {
      reason: 'HarvesterCredentialInvalid',
      message: `${label} cannot be used: its ${err.message}. Fix the kubeconfig in Rancher (Cluster Management > Cloud Credentials > Edit), or point the cluster or pool at another credential`,
    };
  if (!(err instanceof KubeError))
    return {
      reason: 'HarvesterError',
      message: `${label}: ${err instanceof Error ? err.message : String(err)}`,
    };
  if (err.kind === 'CredentialRejected') {
    const expiry = secret ? expiryFromAnnotation(secret) : undefined;
    const who = err.extra.credential?.identity ? `, ${err.extra.credential.identity}` : '';
    const when = expiry
      ? expiry.getTime() <= now
        ? `, expired at ${expiry.toISOString()}`
        : `, recorded expiry ${expiry.toISOString()}`
      : '';
    return {
      reason: 'HarvesterCredentialRejected',
      message: `Harvester rejected ${label}${who}${when}: ${err.message}. Renew it in Rancher (Cluster Management > Cloud Credentials > Renew)`,
    };
  }
  const reachable = !['Unreachable', 'Timeout', 'ServerError', 'TooManyRequests'].includes(err.kind);
  return {
    reason: reachable ? 'HarvesterError' : 'HarvesterUnreachable',
    message: `${label}: ${err.message}`,
  };
}
