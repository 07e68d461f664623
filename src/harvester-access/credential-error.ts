// A rejected credential is the most common reason an old machine cannot be removed
// (expired Rancher cloud credentials). It becomes one error that says so: which
// server refused which credential (never its secret), where the credential came
// from, its expiry when known, what the operation had changed before (usually nothing), and
// what to do.
import { formatDuration } from '../common/durations.js';
import type { CredentialDescription, KubeError } from '../kube/errors.js';

/** Where the kubeconfig in use came from: a config load (argv/env/saved) or create flags. */
export type CredentialSource = 'argv' | 'env' | 'saved' | 'flags';

const SOURCE_TEXT: Record<CredentialSource, string> = {
  argv: 'from --harvester-kubeconfig-content on the command line',
  env: 'from HARVESTER_KUBECONFIG_CONTENT in the environment',
  saved: 'saved in the machine config when the machine was created (no newer one was passed in)',
  flags: 'given with the create flags',
};

export class CredentialRejectedError extends Error {
  override readonly name = 'CredentialRejectedError';
  constructor(
    message: string,
    readonly credential: CredentialDescription,
    readonly source: CredentialSource,
    readonly statusCode: number | undefined,
  ) {
    super(message);
  }
}

export function describeExpiry(expiresAt: Date | undefined, now: Date): string {
  if (!expiresAt) return 'its expiry cannot be read from the credential itself';
  const delta = expiresAt.getTime() - now.getTime();
  return delta <= 0
    ? `it expired at ${expiresAt.toISOString()} (${formatDuration(-delta)} ago)`
    : `it is valid until ${expiresAt.toISOString()} (in ${formatDuration(delta)}), so it was revoked or is not known to this server`;
}

/**
 * `changes`: what the operation had already done on Harvester when the credential was refused
 * (a token can expire in the middle of a create's or a remove's wait).
 */
export function credentialRejected(
  err: KubeError,
  source: CredentialSource,
  now: Date = new Date(),
  changes: readonly string[] = [],
): CredentialRejectedError {
  const credential = err.extra.credential ?? { server: '(unknown server)' };
  const who = credential.identity ?? 'the credential';
  const lines = [
    `Harvester credential rejected: ${err.message}`,
    `The credential is ${who}, ${SOURCE_TEXT[source]}; ${describeExpiry(credential.expiresAt, now)}.`,
    changes.length === 0
      ? 'Nothing was changed on Harvester.'
      : `Before it was refused, this operation had ${changes.join('; ')}; running it again with a valid credential continues from there.`,
    'To fix: renew the Harvester cloud credential in Rancher (Cluster Management > Cloud Credentials > Renew). ' +
      'Do not create a new credential instead: existing machines still reference the old one. ' +
      'Or pass a fresh kubeconfig with --harvester-kubeconfig-content or HARVESTER_KUBECONFIG_CONTENT.',
  ];
  return new CredentialRejectedError(lines.join(' '), credential, source, err.statusCode);
}
