// Rancher's management.cattle.io kinds as the sandbox stores them in Rancher's local
// cluster (sandbox/crds/management.cattle.io.yaml): Token and User keep their fields at the
// top level, as Rancher's Go types do.
import type { KubeObject, ResourceType } from '../../src/kube/resources.js';

const management = (plural: string, kind: string): ResourceType => ({
  group: 'management.cattle.io',
  version: 'v3',
  plural,
  kind,
  namespaced: false,
});

export const RancherResources = {
  token: management('tokens', 'Token'),
  user: management('users', 'User'),
  cluster: management('clusters', 'Cluster'),
} as const;

/** Labels Rancher puts on every token (pkg/auth/tokens/manager.go). */
export const TOKEN_USER_LABEL = 'authn.management.cattle.io/token-userId';
export const TOKEN_KIND_LABEL = 'authn.management.cattle.io/kind';

export interface RancherPrincipal {
  metadata: { name: string };
  principalType?: string;
  provider?: string;
  loginName?: string;
  displayName?: string;
}

export interface RancherTokenObject extends KubeObject {
  token: string;
  userId: string;
  authProvider?: string;
  /** Milliseconds from metadata.creationTimestamp; 0 never expires. */
  ttl: number;
  expiresAt?: string;
  expired?: boolean;
  enabled?: boolean;
  clusterName?: string;
  description?: string;
  isDerived?: boolean;
  current?: boolean;
  userPrincipal?: RancherPrincipal;
  groupPrincipals?: RancherPrincipal[];
}

export interface RancherUserObject extends KubeObject {
  username?: string;
  displayName?: string;
  enabled?: boolean;
  principalIds?: string[];
}

export interface RancherClusterObject extends KubeObject {
  spec: { displayName?: string; internal?: boolean };
  status?: { provider?: string; driver?: string; conditions?: Array<{ type: string; status: string }> };
}

/** Rancher's test for an expired token: creationTimestamp + ttl has passed (ttl 0 never expires). */
export function isTokenExpired(token: RancherTokenObject, now = Date.now()): boolean {
  if (!token.ttl) return false;
  const created = Date.parse(token.metadata.creationTimestamp ?? '');
  if (Number.isNaN(created)) return true;
  return now - created >= token.ttl;
}

/** RFC 3339 at second precision, as Rancher writes expiresAt. */
export function rfc3339Seconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
