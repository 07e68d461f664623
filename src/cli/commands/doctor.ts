// doctor: is this credential good for the driver? Checks a kubeconfig, or a Rancher
// Harvester cloud credential (read from Rancher's local cluster): the server answers over
// verified TLS, the credential is accepted, when it expires, and whether RBAC allows
// every verb the driver uses. One line per check, the fix under each failure; exit code
// 0 when nothing failed, 5 when the credential itself failed, 1 for any other failure.
import type { Command } from 'commander';
import {
  decodeBase64OrPlain,
  describeKubeconfig,
  KubeconfigError,
  loadKubeconfig,
} from '../../kube/kubeconfig-content.js';
import { KubeClient, type KubeClientOptions } from '../../kube/client.js';
import type { KubeconfigTrust } from '../../kube/credential-content.js';
import { isRancherTokenName } from '../../kube/credential.js';
import { isCredentialRejected } from '../../kube/errors.js';
import { Resources, type KubeObject } from '../../kube/resources.js';
import { registerSecret } from '../../log/redact.js';
import {
  ANNOTATION_CREDENTIAL_EXPIRATION,
  CREDENTIAL_KEY_KUBECONFIG,
  credentialKubeconfig,
  expiryFromAnnotation,
  harvesterClusterId,
  type CloudCredentialSecret,
} from '../../rancher/cloud-credential.js';
import type { CliContext, OutputFormat } from '../context.js';
import { ExitWithCode, UsageError } from '../errors.js';
import { chooseKubeconfig, readKubeconfigFile } from '../kubeconfig-source.js';
import { describeSavedCredential } from '../machine-view.js';
import {
  parseCredentialRef,
  probeAccess,
  probeConnection,
  probeIdentity,
  rancherTokenExpiry,
} from '../doctor/probes.js';
import {
  accessVerdict,
  doctorExitCode,
  expiryVerdict,
  reachabilityVerdict,
  renderCheck,
  tlsVerdict,
  tokenVerdict,
  type CheckResult,
  type CredentialOrigin,
  type ExpirySource,
} from '../doctor/verdicts.js';
import { outputOption } from './machine-info.js';

interface DoctorOptions {
  kubeconfig?: string;
  context?: string;
  cloudCredential?: string;
  rancherKubeconfig?: string;
  namespace: string;
  output: OutputFormat;
}

/** One attempt, a short deadline: doctor reports what it finds instead of retrying it away. */
const PROBE_CLIENT: KubeClientOptions = {
  requestTimeoutMs: 10_000,
  retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
};

interface Subject {
  kubeconfig: string;
  /** A cloud credential's (inline credentials only) or a file of the operator's. */
  trust: KubeconfigTrust;
  origin: CredentialOrigin;
  expirySources: ExpirySource[];
  results: CheckResult[];
}

/** Reads the cloud-credential Secret from Rancher; the check line says what was found. */
async function fromCloudCredential(
  at: { namespace: string; name: string },
  rancher: KubeClient,
): Promise<Subject | CheckResult> {
  const label = `${at.namespace}:${at.name}`;
  const check = 'cloud credential';
  let secret: (KubeObject & CloudCredentialSecret) | undefined;
  try {
    secret = await rancher.find<KubeObject & CloudCredentialSecret>(Resources.secret, at);
  } catch (err) {
    const rejected = isCredentialRejected(err);
    return {
      check,
      status: 'fail',
      detail: `cannot read ${label} from Rancher at ${rancher.server}: ${(err as Error).message}`,
      fix: rejected
        ? "the --rancher-kubeconfig credential was rejected: get a fresh kubeconfig for Rancher's local cluster"
        : "check --rancher-kubeconfig: it must reach Rancher's local cluster with access to Secrets in " +
          at.namespace,
    };
  }
  const raw = secret ? credentialKubeconfig(secret) : undefined;
  if (!secret || raw === undefined) {
    return {
      check,
      status: 'fail',
      detail: secret
        ? `${label} holds no ${CREDENTIAL_KEY_KUBECONFIG}: it is not a Harvester cloud credential`
        : `${label} not found in Rancher at ${rancher.server}`,
      fix: 'list the Harvester credentials with: kubectl -n cattle-global-data get secrets -l provisioning.cattle.io/driver=harvester (or see Cluster Management > Cloud Credentials)',
    };
  }
  registerSecret(raw);
  const kubeconfig = decodeBase64OrPlain(raw.trim());
  registerSecret(kubeconfig);
  const clusterId = harvesterClusterId(secret) ?? '';
  const expiresAt = expiryFromAnnotation(secret);
  return {
    kubeconfig,
    trust: 'credential',
    origin: { cloudCredential: label, viaRancher: true },
    expirySources: expiresAt
      ? [{ source: `annotation ${ANNOTATION_CREDENTIAL_EXPIRATION} of ${label}`, expiresAt }]
      : [],
    results: [
      {
        check,
        status: 'pass',
        detail: `${label} in Rancher: a Harvester credential${clusterId ? ` for cluster ${clusterId}` : ''}`,
      },
    ],
  };
}

function kubeconfigCheck(
  kubeconfig: string,
  trust: KubeconfigTrust,
): {
  result: CheckResult;
  facts?: { https: boolean; skipVerify: boolean; hasCa: boolean };
} {
  try {
    const d = describeKubeconfig(kubeconfig, trust);
    const saved = describeSavedCredential(kubeconfig, trust);
    const identity = 'error' in saved ? d.userName : saved.identity;
    const kc = loadKubeconfig(kubeconfig, trust);
    const cluster = kc.getCurrentCluster();
    return {
      result: {
        check: 'kubeconfig',
        status: 'pass',
        detail: `server ${d.server}, context ${d.contextName}, ${identity}`,
      },
      facts: {
        https: d.server.startsWith('https:'),
        skipVerify: cluster?.skipTLSVerify === true,
        hasCa: Boolean(cluster?.caData ?? cluster?.caFile),
      },
    };
  } catch (err) {
    const message =
      err instanceof KubeconfigError ? err.message : `cannot be read: ${(err as Error).message}`;
    return {
      result: {
        check: 'kubeconfig',
        status: 'fail',
        detail: message,
        fix:
          trust === 'credential'
            ? 'make the cloud credential anew in Rancher (Cluster Management > Cloud Credentials), with the kubeconfig Rancher or Harvester gives'
            : 'download a fresh kubeconfig from Harvester or Rancher',
      },
    };
  }
}

async function checkKubeconfig(
  subject: Subject,
  opts: DoctorOptions,
  rancher: KubeClient | undefined,
): Promise<CheckResult[]> {
  const results = [...subject.results];
  const { trust } = subject;
  const parsed = kubeconfigCheck(subject.kubeconfig, trust);
  results.push(parsed.result);
  if (!parsed.facts) return results;
  const description = describeKubeconfig(subject.kubeconfig, trust);
  const origin: CredentialOrigin = {
    ...subject.origin,
    viaRancher: subject.origin.viaRancher || /\/k8s\/clusters\/[^/]+/.test(description.server),
  };
  const saved = describeSavedCredential(subject.kubeconfig, trust);
  const identity = 'error' in saved ? 'the credential' : saved.identity;
  const client = KubeClient.fromKubeconfig(subject.kubeconfig, { ...PROBE_CLIENT, trust });
  try {
    const connection = await probeConnection(client);
    results.push(reachabilityVerdict(connection), tlsVerdict(connection, parsed.facts));
    const who = connection.answered ? await probeIdentity(client) : ({ result: 'not-checked' } as const);
    results.push(tokenVerdict(who, identity, origin));

    const sources = [...subject.expirySources];
    if (rancher && description.tokenName && isRancherTokenName(description.tokenName)) {
      const fromRancher = await rancherTokenExpiry(rancher, description.tokenName).catch(() => undefined);
      if (fromRancher !== undefined)
        sources.push({ source: `Rancher token ${description.tokenName}`, expiresAt: fromRancher });
    }
    const own = client.credential.expiresAt ?? description.tokenExpiresAt;
    if (own) sources.push({ source: `${identity} itself`, expiresAt: own });
    results.push(expiryVerdict(sources, origin, new Date()));

    if (who.result !== 'accepted' || who.username === 'system:anonymous') {
      const why =
        who.result === 'not-checked' ? 'the server did not answer' : 'the credential was not accepted';
      results.push({ check: 'RBAC', status: 'skip', detail: `not checked: ${why}` });
      return results;
    }
    for (const { need, answers } of await probeAccess(client, opts.namespace)) {
      results.push(
        accessVerdict(need, answers, {
          namespace: opts.namespace,
          username: who.username,
          viaRancher: origin.viaRancher,
        }),
      );
    }
    return results;
  } finally {
    client.close();
  }
}

async function doctor(ctx: CliContext, opts: DoctorOptions): Promise<void> {
  if (opts.kubeconfig && opts.cloudCredential)
    throw new UsageError('give either --kubeconfig or --cloud-credential, not both');
  if (opts.cloudCredential && !opts.rancherKubeconfig) {
    throw new UsageError(
      "--cloud-credential needs --rancher-kubeconfig <file>: a kubeconfig for Rancher's local cluster, where the credential is kept",
    );
  }
  const credentialRef = opts.cloudCredential ? parseCredentialRef(opts.cloudCredential) : undefined;
  const rancher = opts.rancherKubeconfig
    ? KubeClient.fromKubeconfig(readKubeconfigFile(opts.rancherKubeconfig, '--rancher-kubeconfig'), {
        ...PROBE_CLIENT,
        trust: 'operator',
      })
    : undefined;
  let results: CheckResult[];
  try {
    let subject: Subject | CheckResult;
    if (credentialRef && rancher) subject = await fromCloudCredential(credentialRef, rancher);
    else {
      const choice = chooseKubeconfig(opts.kubeconfig, ctx.env, undefined, opts.context);
      subject = {
        kubeconfig: choice.content,
        trust: choice.trust,
        origin: { viaRancher: false },
        expirySources: [],
        results: [],
      };
    }
    results = 'kubeconfig' in subject ? await checkKubeconfig(subject, opts, rancher) : [subject];
  } finally {
    rancher?.close();
  }
  const code = doctorExitCode(results);
  if (opts.output === 'json') ctx.json({ ok: code === 0, exitCode: code, checks: results });
  else {
    for (const result of results) for (const line of renderCheck(result, ctx.stdoutIsTerminal)) ctx.out(line);
    const failed = results.filter((r) => r.status === 'fail').length;
    ctx.out(failed === 0 ? 'All checks passed.' : `${failed} check(s) failed.`);
  }
  if (code !== 0) throw new ExitWithCode(code);
}

export function registerDoctor(program: Command, ctx: CliContext): void {
  program
    .command('doctor')
    .description(
      'check a Harvester credential for the driver: server reachable over verified TLS, credential accepted, its expiry, and RBAC for every verb the driver uses',
    )
    .option(
      '--kubeconfig <file>',
      'the kubeconfig to check (default: HARVESTER_KUBECONFIG_CONTENT, $KUBECONFIG, ~/.kube/config)',
    )
    .option('--context <name>', 'with a kubeconfig: use this context instead of its current-context')
    .option(
      '--cloud-credential <namespace:name>',
      'check a Rancher Harvester cloud credential instead (e.g. cattle-global-data:cc-abc12)',
    )
    .option(
      '--rancher-kubeconfig <file>',
      "kubeconfig for Rancher's local cluster, where cloud credentials and tokens are kept",
    )
    .option(
      '-n, --namespace <namespace>',
      'the namespace the machines are created in (--harvester-vm-namespace)',
      'default',
    )
    .addOption(outputOption())
    .action((opts: DoctorOptions) => doctor(ctx, opts));
}
