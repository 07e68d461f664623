// doctor's decisions, apart from the probing: what each observation means (pass, warn,
// fail), what to do about a failure, how a line looks, and the exit code.
import { formatDuration } from '../../common/durations.js';
import { describeExpiry } from '../../harvester-access/credential-error.js';
import { resourceLabel, type AccessNeed } from './required-access.js';

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip' | 'info';

export interface CheckResult {
  check: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
  /** A failed credential check makes doctor exit with 5 (credential rejected). */
  credential?: boolean;
}

export const EXPIRING_SOON_MS = 7 * 86_400_000;

// ---- the credential's origin, for the fixes ----

export interface CredentialOrigin {
  /** "cattle-global-data:cc-abc" when doctor checked a Rancher cloud credential. */
  cloudCredential?: string;
  /** The server is Rancher's /k8s/clusters/<id> proxy. */
  viaRancher: boolean;
}

export function renewAdvice(origin: CredentialOrigin): string {
  if (origin.cloudCredential) {
    return (
      `renew the cloud credential ${origin.cloudCredential} in Rancher (Cluster Management > Cloud Credentials > Renew); ` +
      'do not create a new credential instead: existing machines keep referencing this one'
    );
  }
  if (origin.viaRancher) {
    return (
      'renew the Harvester cloud credential in Rancher (Cluster Management > Cloud Credentials > Renew), or download a new kubeconfig ' +
      'for the Harvester cluster from Rancher; stored machines take it with --kubeconfig <file> or HARVESTER_KUBECONFIG_CONTENT'
    );
  }
  return (
    'get a new kubeconfig for Harvester (Harvester UI: Support > Download KubeConfig); ' +
    'stored machines take it with --kubeconfig <file> or HARVESTER_KUBECONFIG_CONTENT'
  );
}

// ---- connection ----

export interface ConnectionProbe {
  server: string;
  /** The server answered over HTTP (any status). */
  answered: boolean;
  statusCode?: number;
  error?: string;
  /** The connection failed in the TLS handshake (certificate not trusted, wrong name, expired). */
  tlsError?: boolean;
}

export interface TlsFacts {
  https: boolean;
  /** insecure-skip-tls-verify in the kubeconfig. */
  skipVerify: boolean;
  /** certificate-authority(-data) in the kubeconfig; else the system's CAs. */
  hasCa: boolean;
}

export function reachabilityVerdict(probe: ConnectionProbe): CheckResult {
  if (probe.answered) {
    return {
      check: 'reachable',
      status: 'pass',
      detail: `${probe.server} answered (HTTP ${probe.statusCode ?? 200})`,
    };
  }
  if (probe.tlsError) {
    return {
      check: 'reachable',
      status: 'pass',
      detail: `${probe.server} accepts connections (TLS failed, below)`,
    };
  }
  return {
    check: 'reachable',
    status: 'fail',
    detail: `${probe.server}: ${probe.error ?? 'no answer'}`,
    fix: 'check the server URL in the kubeconfig and that this machine can reach it (VPN, firewall, proxy settings)',
  };
}

export function tlsVerdict(probe: ConnectionProbe, tls: TlsFacts): CheckResult {
  if (!tls.https) {
    return {
      check: 'TLS',
      status: 'warn',
      detail: 'the server URL is plain http: nothing is encrypted or verified',
      fix: 'use the https URL of the Harvester or Rancher server',
    };
  }
  if (probe.tlsError) {
    return {
      check: 'TLS',
      status: 'fail',
      detail: `certificate not verified: ${probe.error ?? 'handshake failed'}`,
      fix:
        "the server's certificate is not signed by the kubeconfig's certificate-authority-data (or names another host): " +
        'download a fresh kubeconfig from Harvester or Rancher',
    };
  }
  if (!probe.answered)
    return { check: 'TLS', status: 'skip', detail: 'not checked: the server did not answer' };
  if (tls.skipVerify) {
    return {
      check: 'TLS',
      status: 'warn',
      detail: 'not verified: the kubeconfig sets insecure-skip-tls-verify',
      fix: "put the server's CA in certificate-authority-data and drop insecure-skip-tls-verify",
    };
  }
  return {
    check: 'TLS',
    status: 'pass',
    detail: tls.hasCa
      ? "certificate verified against the kubeconfig's CA"
      : "certificate verified against the system's CAs",
  };
}

// ---- the credential ----

export type IdentityProbe =
  | { result: 'accepted'; username: string; groups: string[] }
  | { result: 'rejected'; error: string; statusCode?: number }
  | { result: 'not-checked' }
  | { result: 'error'; error: string };

export function tokenVerdict(probe: IdentityProbe, identity: string, origin: CredentialOrigin): CheckResult {
  switch (probe.result) {
    case 'accepted':
      if (probe.username === 'system:anonymous') {
        return {
          check: 'credential accepted',
          status: 'fail',
          credential: true,
          detail: `${identity}: the server treats the requests as anonymous`,
          fix: 'the kubeconfig carries no credential the server knows: ' + renewAdvice(origin),
        };
      }
      return {
        check: 'credential accepted',
        status: 'pass',
        detail: `${identity}: authenticated as ${probe.username}`,
      };
    case 'rejected':
      return {
        check: 'credential accepted',
        status: 'fail',
        credential: true,
        detail: `${identity} rejected${probe.statusCode ? ` (HTTP ${probe.statusCode})` : ''}: ${probe.error}`,
        fix: renewAdvice(origin),
      };
    case 'not-checked':
      return {
        check: 'credential accepted',
        status: 'skip',
        detail: 'not checked: the server did not answer',
      };
    case 'error':
      return {
        check: 'credential accepted',
        status: 'fail',
        detail: probe.error,
        fix: 'run doctor again with --debug',
      };
  }
}

export interface ExpirySource {
  /** "annotation rancher.io/expiration-timestamp of cattle-global-data:cc-abc" */
  source: string;
  /** null: never expires. */
  expiresAt: Date | null;
}

/** The first source that knows decides (the credential's annotation, Rancher's token, the token itself). */
export function expiryVerdict(
  sources: readonly ExpirySource[],
  origin: CredentialOrigin,
  now: Date,
  soonMs = EXPIRING_SOON_MS,
): CheckResult {
  const known = sources[0];
  if (!known) {
    return {
      check: 'expiry',
      status: 'info',
      detail: 'unknown: neither the credential nor its token says when it expires',
    };
  }
  if (known.expiresAt === null)
    return { check: 'expiry', status: 'pass', detail: `never expires (${known.source})` };
  const left = known.expiresAt.getTime() - now.getTime();
  if (left <= 0) {
    return {
      check: 'expiry',
      status: 'fail',
      credential: true,
      detail: `${describeExpiry(known.expiresAt, now).replace(/^it /, '')} (${known.source})`,
      fix: renewAdvice(origin),
    };
  }
  const detail = `valid until ${known.expiresAt.toISOString()} (in ${formatDuration(left)}; ${known.source})`;
  if (left <= soonMs) return { check: 'expiry', status: 'warn', detail, fix: renewAdvice(origin) };
  return { check: 'expiry', status: 'pass', detail };
}

// ---- RBAC ----

export interface AccessAnswer {
  verb: string;
  subresource?: string;
  allowed: boolean;
  /** The review could not be made (not the same as a denial). */
  error?: string;
}

function ruleText(need: AccessNeed, verbs: readonly string[]): string {
  const resources = need.subresources
    ? need.subresources.map((subresource) => `"${need.resource}/${subresource}"`)
    : [`"${need.resource}"`];
  return `{apiGroups: ["${need.group}"], resources: [${resources.join(', ')}], verbs: [${verbs.map((v) => `"${v}"`).join(', ')}]}`;
}

export function accessVerdict(
  need: AccessNeed,
  answers: readonly AccessAnswer[],
  where: { namespace: string; username?: string; viaRancher: boolean },
): CheckResult {
  const scope = need.scope === 'cluster' ? 'cluster-wide' : `in namespace ${where.namespace}`;
  const check = `RBAC ${resourceLabel(need)}`;
  const label = (a: AccessAnswer): string =>
    a.subresource ? `${a.verb} ${need.resource}/${a.subresource}` : a.verb;
  const errors = answers.filter((a) => a.error);
  if (errors.length > 0) {
    return {
      check,
      status: 'fail',
      detail: `${scope}: could not ask (${errors[0]?.error ?? ''})`,
      fix: 'run doctor again with --debug',
    };
  }
  const denied = answers.filter((a) => !a.allowed);
  if (denied.length === 0)
    return { check, status: 'pass', detail: `${scope}: ${answers.map(label).join(', ')}` };
  const allowed = answers.filter((a) => a.allowed).map(label);
  const verbs = [...new Set(denied.map((a) => a.verb))];
  const binding =
    need.scope === 'cluster'
      ? 'a ClusterRole and ClusterRoleBinding'
      : `a Role and RoleBinding in namespace ${where.namespace}`;
  const who = where.username ? ` to ${where.username}` : '';
  const rancher = where.viaRancher
    ? " (through Rancher: a role for the credential's user in the Harvester cluster or project)"
    : '';
  return {
    check,
    status: need.optional ? 'warn' : 'fail',
    detail: `${scope}: ${denied.map(label).join(', ')} denied${allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}; needed for ${need.usedFor}`,
    fix: `grant${who} the rule ${ruleText(need, verbs)} with ${binding}${rancher}`,
  };
}

// ---- output ----

const SYMBOL: Record<CheckStatus, string> = { pass: '✓', warn: '!', fail: '✗', skip: '-', info: 'i' };
const WORD: Record<CheckStatus, string> = {
  pass: 'PASS',
  warn: 'WARN',
  fail: 'FAIL',
  skip: 'SKIP',
  info: 'INFO',
};

/** One line per check, and the fix on the next line when there is one. */
export function renderCheck(result: CheckResult, tty: boolean): string[] {
  const mark = tty ? SYMBOL[result.status] : WORD[result.status];
  const lines = [`${mark} ${result.check}: ${result.detail}`];
  if (result.fix && (result.status === 'fail' || result.status === 'warn'))
    lines.push(`    fix: ${result.fix}`);
  return lines;
}

/** 0 when nothing failed; 5 when the credential itself failed (rejected, expired); 1 otherwise. */
export function doctorExitCode(results: readonly CheckResult[]): number {
  const failed = results.filter((r) => r.status === 'fail');
  if (failed.length === 0) return 0;
  return failed.some((r) => r.credential) ? 5 : 1;
}
