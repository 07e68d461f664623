// Rancher API tokens in the sandbox's Rancher control plane, made the way Rancher's
// generateKubeconfig makes them (rancher v2.11.9, usermanager.EnsureClusterToken): name
// generated from "kubeconfig-<userId>" plus 5 random characters, a 54-character secret,
// kind "kubeconfig", the TTL in ms, expiresAt = creationTimestamp + ttl, and the secret
// stored as a salted hash. The caller gets "<name>:<secret>", the only copy of the secret.
//
// How the sandbox models what happens to a credential afterwards:
// - expireRancherToken: the token's lifetime ends now (Rancher decides expiry from
//   creationTimestamp + ttl, so the TTL is shortened).
// - renewRancherToken: what "Renew" in Rancher's UI does (>= 2.9.3): generateKubeconfig
//   again, i.e. a NEW token with a new name and secret for the same user; the old token is
//   left as it is (expired). The caller saves the new kubeconfig into the same cloud
//   credential, so only code that reads the current credential benefits.
// - extendRancherToken: what Rancher 2.12's harvester token controller does to the token
//   named in a credential's kubeconfig: the SAME token gets a new TTL (0 = never expires).
import crypto from 'node:crypto';
import type { KubeClient } from '../../src/kube/client.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import { Resources, type KubeObject, type NewObject } from '../../src/kube/resources.js';
import { registerSecret } from '../../src/log/redact.js';
import { recordSecret } from '../secret-ledger.js';
import {
  RancherResources,
  TOKEN_KIND_LABEL,
  TOKEN_USER_LABEL,
  rfc3339Seconds,
  type RancherTokenObject,
  type RancherUserObject,
} from './resources.js';
import { TOKEN_HASHED_ANNOTATION, hashTokenSecret } from './token-hash.js';

/** The alphabet of Rancher's random token keys and of Kubernetes' generateName suffixes. */
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export function randomRancherString(length: number): string {
  return Array.from(crypto.randomBytes(length), (b) => ALPHABET[b % ALPHABET.length]).join('');
}

/** A Rancher user id as Rancher generates them for ordinary users: "u-" + 5 characters. */
export function newRancherUserId(): string {
  return `u-${randomRancherString(5)}`;
}

export interface RancherToken {
  name: string;
  /** "<name>:<secret>": what goes into a kubeconfig. */
  token: string;
  userId: string;
  /** undefined when the token never expires (ttl 0). */
  expiresAt: Date | undefined;
}

export interface CreateRancherTokenOptions {
  userId: string;
  /** Lifetime in ms; 0 never expires (Rancher's default for kubeconfigs is 30 days). */
  ttlMs: number;
  /** The downstream cluster the kubeconfig is for: the user is made a member of it. */
  clusterId: string;
  /** A fixed name instead of one generated from "kubeconfig-<userId>". */
  name?: string;
  /**
   * Set token.clusterName, so the token is refused for every other cluster. Rancher only
   * does this when the cluster's authorized cluster endpoint is on (not for Harvester).
   */
  scopeToCluster?: boolean;
  /** Store a salted hash of the secret (default) or, as older Rancher did, the secret itself. */
  hashed?: boolean;
}

export async function createRancherToken(
  rancher: KubeClient,
  opts: CreateRancherTokenOptions,
): Promise<RancherToken> {
  await ensureRancherUser(rancher, opts.userId);
  await ensureClusterMember(rancher, { clusterId: opts.clusterId, userId: opts.userId });
  const secret = randomRancherString(54);
  const hashed = opts.hashed ?? true;
  const body: NewObject<RancherTokenObject> = {
    apiVersion: 'management.cattle.io/v3',
    kind: 'Token',
    metadata: {
      ...(opts.name ? { name: opts.name } : { generateName: `kubeconfig-${opts.userId}` }),
      labels: { [TOKEN_USER_LABEL]: opts.userId, [TOKEN_KIND_LABEL]: 'kubeconfig' },
      ...(hashed ? { annotations: { [TOKEN_HASHED_ANNOTATION]: 'true' } } : {}),
    },
    token: hashed ? hashTokenSecret(secret) : secret,
    userId: opts.userId,
    authProvider: 'local',
    userPrincipal: {
      metadata: { name: `local://${opts.userId}` },
      principalType: 'user',
      provider: 'local',
    },
    ttl: opts.ttlMs,
    description: 'Kubeconfig token',
    isDerived: true,
    expired: false,
    expiresAt: '',
    current: false,
    ...(opts.scopeToCluster ? { clusterName: opts.clusterId } : {}),
  };
  const created = await rancher.create<RancherTokenObject>(RancherResources.token, body);
  const name = created.metadata.name;
  const token = `${name}:${secret}`;
  registerSecret(token);
  registerSecret(secret);
  // The secrets scan after the suite looks for every token made here (no-op outside it).
  recordSecret(`Rancher token ${name}`, token);
  recordSecret(`Rancher token ${name} (secret part)`, secret);
  // As Rancher: expiresAt can only be computed once the server set creationTimestamp.
  const expiresAt = expiryOf(created.metadata.creationTimestamp, opts.ttlMs);
  if (expiresAt) {
    await rancher.patch(RancherResources.token, { name }, { expiresAt: rfc3339Seconds(expiresAt.getTime()) });
  }
  return { name, token, userId: opts.userId, expiresAt };
}

function expiryOf(creationTimestamp: string | undefined, ttlMs: number): Date | undefined {
  if (!ttlMs) return undefined;
  return new Date(Date.parse(creationTimestamp ?? '') + ttlMs);
}

/** Ends the token's lifetime now. Resolves with the instant it expired. */
export async function expireRancherToken(rancher: KubeClient, name: string): Promise<Date> {
  const token = await rancher.get<RancherTokenObject>(RancherResources.token, { name });
  const created = Date.parse(token.metadata.creationTimestamp ?? '');
  const ttl = Math.max(1, Date.now() - created);
  await rancher.patch(
    RancherResources.token,
    { name },
    {
      ttl,
      expiresAt: rfc3339Seconds(created + ttl),
      expired: true,
    },
  );
  return new Date(created + ttl);
}

/**
 * Rancher UI's Renew: a new kubeconfig token for the same user and cluster. The previous
 * token is not touched (it stays expired); save the result into the same cloud credential.
 */
export function renewRancherToken(
  rancher: KubeClient,
  previous: { userId: string },
  opts: { clusterId: string; ttlMs: number },
): Promise<RancherToken> {
  return createRancherToken(rancher, {
    userId: previous.userId,
    clusterId: opts.clusterId,
    ttlMs: opts.ttlMs,
  });
}

/** Rancher 2.12's treatment of a credential's token: the same token, a new TTL (0 = never). */
export async function extendRancherToken(
  rancher: KubeClient,
  name: string,
  opts: { ttlMs: number },
): Promise<Date | undefined> {
  const token = await rancher.get<RancherTokenObject>(RancherResources.token, { name });
  const expiresAt = expiryOf(token.metadata.creationTimestamp, opts.ttlMs);
  await rancher.patch(
    RancherResources.token,
    { name },
    {
      ttl: opts.ttlMs,
      expiresAt: expiresAt ? rfc3339Seconds(expiresAt.getTime()) : '',
      expired: expiresAt !== undefined && expiresAt.getTime() <= Date.now(),
    },
  );
  return expiresAt;
}

/** Deletes the token; resolves false when it was already gone. */
export function deleteRancherToken(rancher: KubeClient, name: string): Promise<boolean> {
  return rancher.delete(RancherResources.token, { name });
}

async function createIfAbsent(rancher: KubeClient, create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/** A local Rancher user (Rancher refuses tokens of users that do not exist or are disabled). */
export async function ensureRancherUser(
  rancher: KubeClient,
  userId: string,
  opts: { username?: string; displayName?: string } = {},
): Promise<void> {
  await createIfAbsent(rancher, () =>
    rancher.create<RancherUserObject>(RancherResources.user, {
      apiVersion: 'management.cattle.io/v3',
      kind: 'User',
      metadata: { name: userId },
      username: opts.username ?? userId,
      displayName: opts.displayName ?? opts.username ?? userId,
      principalIds: [`local://${userId}`],
      enabled: true,
    }),
  );
}

/**
 * What cluster membership gives a user in Rancher's local cluster, as far as the proxy
 * checks it: get on clusters.management.cattle.io/<clusterId> (Rancher's
 * <clusterId>-clustermember role carries that rule).
 */
export async function ensureClusterMember(
  rancher: KubeClient,
  opts: { clusterId: string; userId: string },
): Promise<void> {
  const role = `${opts.clusterId}-clustermember`;
  await createIfAbsent(rancher, () =>
    rancher.create<KubeObject>(Resources.clusterRole, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: role },
      rules: [
        {
          apiGroups: ['management.cattle.io'],
          resources: ['clusters'],
          resourceNames: [opts.clusterId],
          verbs: ['get'],
        },
      ],
    } as KubeObject),
  );
  await createIfAbsent(rancher, () =>
    rancher.create<KubeObject>(Resources.clusterRoleBinding, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${role}-${opts.userId}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: opts.userId }],
    } as KubeObject),
  );
}
