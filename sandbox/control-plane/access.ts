// Test and sandbox helpers for who may do what: namespaces, users whose bootstrap tokens
// expire at a chosen instant with the RBAC you pass, and the wait until a credential is refused.
import crypto from 'node:crypto';
import { KubeClient } from '../../src/kube/client.js';
import { isCredentialRejected, type KubeError } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { retryUntil } from '../../src/kube/wait.js';
import { recordSecret } from '../secret-ledger.js';
import { buildKubeconfig } from './kubeconfig.js';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** A fresh namespace with a unique name: one per test keeps tests apart. */
export async function createNamespace(admin: KubeClient, prefix = 'test'): Promise<string> {
  const ns = await admin.create<KubeObject>(Resources.namespace, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      generateName: `${prefix
        .toLowerCase()
        .replace(/[^a-z0-9-]/g, '-')
        .slice(0, 40)}-`,
    },
  });
  return ns.metadata.name;
}

function randomToken(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = crypto.randomBytes(length);
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}

export interface TokenUser {
  tokenId: string;
  /** `<id>.<secret>` */
  token: string;
  /** `system:bootstrap:<id>` */
  username: string;
  expiresAt: Date;
}

/**
 * Creates a bootstrap token that expires at `expiresAt` and binds `rules`
 * (cluster-wide, or in `namespace` when given) to its user.
 */
export async function createTokenUser(
  admin: KubeClient,
  opts: { expiresAt: Date; rules?: PolicyRule[]; clusterRole?: string; namespace?: string },
): Promise<TokenUser> {
  const tokenId = randomToken(6);
  const secret = randomToken(16);
  const username = `system:bootstrap:${tokenId}`;
  await admin.create<KubeObject & { type: string; stringData: Record<string, string> }>(Resources.secret, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${tokenId}`, namespace: 'kube-system' },
    type: 'bootstrap.kubernetes.io/token',
    stringData: {
      'token-id': tokenId,
      'token-secret': secret,
      'usage-bootstrap-authentication': 'true',
      expiration: opts.expiresAt.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    },
  });
  let roleName = opts.clusterRole;
  if (opts.rules) {
    roleName = `hm-user-${tokenId}`;
    await admin.create(Resources.clusterRole, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: roleName },
      rules: opts.rules,
    } as KubeObject);
  }
  if (roleName) {
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      metadata: { name: `hm-user-${tokenId}`, ...(opts.namespace ? { namespace: opts.namespace } : {}) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: username }],
    };
    if (opts.namespace) await admin.create(Resources.roleBinding, { ...binding, kind: 'RoleBinding' });
    else await admin.create(Resources.clusterRoleBinding, { ...binding, kind: 'ClusterRoleBinding' });
  }
  // The secrets scan after the suite looks for every token made here (no-op outside it).
  recordSecret(`bootstrap token ${tokenId}`, `${tokenId}.${secret}`);
  recordSecret(`bootstrap token ${tokenId} (secret part)`, secret);
  return { tokenId, token: `${tokenId}.${secret}`, username, expiresAt: opts.expiresAt };
}

/** Moves a bootstrap token's expiry (renewal, or expiring it now). */
export async function setTokenExpiry(admin: KubeClient, user: TokenUser, expiresAt: Date): Promise<void> {
  await admin.patch(
    Resources.secret,
    { namespace: 'kube-system', name: `bootstrap-token-${user.tokenId}` },
    { stringData: { expiration: expiresAt.toISOString().replace(/\.\d{3}Z$/, 'Z') } },
  );
  user.expiresAt = expiresAt;
}

export function tokenKubeconfig(opts: {
  name: string;
  server: string;
  caPem: string;
  token: string;
}): string {
  return buildKubeconfig({
    name: opts.name,
    server: opts.server,
    caPem: opts.caPem,
    user: { token: opts.token },
  });
}

/**
 * Lists VMs in `namespace` with `kubeconfig` until the server refuses the credential (an
 * apiserver caches a bootstrap token up to 10 s, Rancher's proxy its token check a moment);
 * returns the refusal, or a WaitTimeoutError after `timeoutMs`.
 */
export async function untilCredentialRefused(
  kubeconfig: string,
  namespace: string,
  timeoutMs: number,
): Promise<KubeError> {
  const client = KubeClient.fromKubeconfig(kubeconfig, {
    retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
  });
  let last = 'not tried';
  try {
    return await retryUntil({
      description: 'the expired credential to be refused',
      timeoutMs,
      lastState: () => last,
      attempt: async () => {
        const err = await client.list(Resources.virtualMachine, { namespace }).then(
          () => undefined,
          (e: unknown) => e,
        );
        if (isCredentialRejected(err)) return err;
        last =
          err === undefined
            ? 'accepted'
            : err instanceof Error
              ? `another error: ${err.message}`
              : 'another error';
        return undefined;
      },
    });
  } finally {
    client.close();
  }
}
