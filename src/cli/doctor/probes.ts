// doctor's questions to the servers: does Harvester answer (and over verified TLS), who
// does it take the credential for, what may that identity do (per verb), each asked through
// src/harvester-access/self-review.ts and judged here; and what Rancher knows of the
// credential (the cloud-credential Secret, the token behind it), asked of Rancher's apiserver.
import type { KubeClient } from '../../kube/client.js';
import { isKubeError, KubeError } from '../../kube/errors.js';
import type { KubeObject, ResourceType } from '../../kube/resources.js';
import { askVersion, reviewAccess, reviewSelf } from '../../harvester-access/self-review.js';
import { CLOUD_CREDENTIAL_NAMESPACE } from '../../rancher/cloud-credential.js';
import { UsageError } from '../errors.js';
import { DRIVER_ACCESS, type AccessNeed } from './required-access.js';
import type { AccessAnswer, ConnectionProbe, IdentityProbe } from './verdicts.js';

const TLS_ERROR = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_(VERIFY|GET)|ALTNAME/;

function causeCode(err: KubeError): string | undefined {
  const cause = (err as { cause?: unknown }).cause ?? err.extra.cause;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** GET /version: any HTTP answer proves the server is reachable (and TLS verified). */
export async function probeConnection(client: KubeClient): Promise<ConnectionProbe> {
  const server = client.server;
  try {
    await askVersion(client);
    return { server, answered: true, statusCode: 200 };
  } catch (err) {
    if (!(err instanceof KubeError)) throw err;
    if (err.statusCode !== undefined) return { server, answered: true, statusCode: err.statusCode };
    const code = causeCode(err);
    const tlsError = code !== undefined && TLS_ERROR.test(code);
    return {
      server,
      answered: false,
      error: `${err.message}${code && !err.message.includes(code) ? ` (${code})` : ''}`,
      tlsError,
    };
  }
}

export async function probeIdentity(client: KubeClient): Promise<IdentityProbe> {
  try {
    const user = await reviewSelf(client);
    return { result: 'accepted', username: user?.username ?? '(unknown user)', groups: user?.groups ?? [] };
  } catch (err) {
    if (!(err instanceof KubeError)) throw err;
    if (err.kind === 'CredentialRejected') {
      return {
        result: 'rejected',
        error: err.message,
        ...(err.statusCode ? { statusCode: err.statusCode } : {}),
      };
    }
    // Authenticated, only not allowed to ask or not served (Kubernetes < 1.28): the credential works.
    if (['Forbidden', 'NotFound', 'MethodNotAllowed'].includes(err.kind)) {
      return { result: 'accepted', username: '(not told: SelfSubjectReview unavailable)', groups: [] };
    }
    return { result: 'error', error: err.message };
  }
}

async function canI(
  client: KubeClient,
  need: AccessNeed,
  verb: string,
  subresource: string | undefined,
  namespace: string,
): Promise<AccessAnswer> {
  try {
    const allowed = await reviewAccess(client, {
      group: need.group,
      resource: need.resource,
      verb,
      ...(subresource ? { subresource } : {}),
      ...(need.scope === 'namespace' ? { namespace } : {}),
    });
    return { verb, ...(subresource ? { subresource } : {}), allowed };
  } catch (err) {
    if (!(err instanceof KubeError)) throw err;
    return { verb, ...(subresource ? { subresource } : {}), allowed: false, error: err.message };
  }
}

/** Every verb the driver needs, asked in parallel; answers in DRIVER_ACCESS order. */
export async function probeAccess(
  client: KubeClient,
  namespace: string,
): Promise<Array<{ need: AccessNeed; answers: AccessAnswer[] }>> {
  return Promise.all(
    DRIVER_ACCESS.map(async (need) => ({
      need,
      answers: await Promise.all(
        (need.subresources ?? [undefined]).flatMap((sub) =>
          need.verbs.map((verb) => canI(client, need, verb, sub, namespace)),
        ),
      ),
    })),
  );
}

// ---- Rancher ----

const rancherToken: ResourceType = {
  group: 'management.cattle.io',
  version: 'v3',
  plural: 'tokens',
  kind: 'Token',
  namespaced: false,
};

export function parseCredentialRef(ref: string): { namespace: string; name: string } {
  const m = /^(?:([a-z0-9-]+)[:/])?([a-z0-9.-]+)$/.exec(ref.trim());
  if (!m?.[2])
    throw new UsageError(
      `--cloud-credential ${ref}: expected <namespace>:<name>, e.g. cattle-global-data:cc-abc12`,
    );
  return { namespace: m[1] ?? CLOUD_CREDENTIAL_NAMESPACE, name: m[2] };
}

/**
 * What Rancher's Token object says of a token's expiry: a Date, null for never
 * (ttl 0), undefined when the token is unknown or cannot be read.
 */
export async function rancherTokenExpiry(
  rancher: KubeClient,
  tokenName: string,
): Promise<Date | null | undefined> {
  try {
    const token = await rancher.find<KubeObject & { ttl?: number; expiresAt?: string }>(rancherToken, {
      name: tokenName,
    });
    if (!token) return undefined;
    if (!token.ttl) return null;
    const at = Date.parse(token.expiresAt ?? '');
    if (!Number.isNaN(at)) return new Date(at);
    const created = Date.parse(token.metadata.creationTimestamp ?? '');
    return Number.isNaN(created) ? undefined : new Date(created + token.ttl);
  } catch (err) {
    if (isKubeError(err, 'Forbidden', 'NotFound')) return undefined;
    throw err;
  }
}
