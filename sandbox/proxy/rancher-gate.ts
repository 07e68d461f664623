// Rancher's front door to /k8s/clusters/<clusterId>/... (rancher v2.11.9): the bearer token
// "<name>:<secret>" is looked up among Rancher's tokens and mapped to its user. A token
// that is unknown, deleted, expired (creationTimestamp + ttl), disabled, scoped to another
// cluster, or whose user is gone does NOT get a 401: Rancher's authenticator fails, its
// service-account authenticator then hands the request on as "system:unauthenticated", and
// the cluster lookup (norman, impersonating that user in Rancher's local cluster) is denied
// by RBAC. Rancher writes that denial as a norman API error, not as a Kubernetes Status:
//   403 {"Code":{"Code":"Forbidden","Status":403},"Message":"clusters.management.cattle.io
//   \"<id>\" is forbidden: User \"system:unauthenticated\" cannot get resource \"clusters\" in
//   API group \"management.cattle.io\" at the cluster scope","Cause":null,"FieldName":""}
// (clusterrouter/router.go writes it with json.Encoder after WriteHeader, so Go sniffs the
// content type: text/plain). The same check answers an unknown cluster id: forbidden for
// users who may not see it, 404 NotFound for those who may.
import type http from 'node:http';
import type { KubeClient } from '../../src/kube/client.js';
import {
  isTokenExpired,
  RancherResources,
  type RancherTokenObject,
  type RancherUserObject,
} from '../rancher/resources.js';
import { tokenSecretMatches } from '../rancher/token-hash.js';
import { authorize, type Identity } from './identity.js';

export const UNAUTHENTICATED: Identity = {
  username: 'system:unauthenticated',
  groups: ['system:unauthenticated'],
};

/** The "<name>:<secret>" Rancher reads from Authorization: Bearer, or Basic base64("<name>:<secret>"). */
export function rancherTokenFromHeader(header: string | undefined): string | undefined {
  const [scheme, value] = (header ?? '').trim().split(/\s+/, 2);
  if (!scheme || !value) return undefined;
  if (scheme.toLowerCase() === 'bearer') return value;
  if (scheme.toLowerCase() === 'basic') return Buffer.from(value, 'base64').toString('utf8');
  return undefined;
}

/**
 * The Rancher user behind a request to /k8s/clusters/<clusterId>, or UNAUTHENTICATED for
 * every way a token can fail.
 */
export async function rancherIdentity(
  rancher: KubeClient,
  authorization: string | undefined,
  clusterId: string,
  now = Date.now(),
): Promise<Identity> {
  const presented = rancherTokenFromHeader(authorization);
  const parts = presented?.split(':') ?? [];
  const [name, secret] = parts;
  if (parts.length !== 2 || !name || !secret) return UNAUTHENTICATED;
  const token = await rancher.find<RancherTokenObject>(RancherResources.token, { name });
  if (!token || !tokenSecretMatches(token, secret) || isTokenExpired(token, now)) return UNAUTHENTICATED;
  if (token.enabled === false) return UNAUTHENTICATED;
  if (token.clusterName && token.clusterName !== clusterId) return UNAUTHENTICATED;
  const user = await rancher.find<RancherUserObject>(RancherResources.user, { name: token.userId });
  if (!user || user.enabled === false) return UNAUTHENTICATED;
  const groups = (token.groupPrincipals ?? []).map((p) => p.metadata.name.replace(/^local:\/\//, ''));
  return {
    username: token.userId,
    groups: [...groups, 'system:authenticated', 'system:cattle:authenticated'],
    extra: {
      requesttokenid: [name],
      principalid: user.principalIds ?? [],
      username: [user.username ?? token.userId],
    },
  };
}

/** A norman API error, the body Rancher's own handlers answer with. */
export interface NormanError {
  code: string;
  status: number;
  message: string;
}

/**
 * Rancher's cluster lookup for /k8s/clusters/<clusterId>: undefined when the user may get
 * the cluster and it exists, else the error Rancher answers with.
 */
export async function checkClusterAccess(
  rancher: KubeClient,
  who: Identity,
  clusterId: string,
): Promise<NormanError | undefined> {
  const denied = await authorize(rancher, who, {
    resource: {
      verb: 'get',
      group: 'management.cattle.io',
      version: 'v3',
      resource: 'clusters',
      name: clusterId,
    },
  });
  if (denied)
    return { code: denied.reason ?? 'Forbidden', status: denied.code, message: denied.message ?? '' };
  const cluster = await rancher.find(RancherResources.cluster, { name: clusterId });
  if (!cluster) {
    return {
      code: 'NotFound',
      status: 404,
      message: `clusters.management.cattle.io "${clusterId}" not found`,
    };
  }
  return undefined;
}

export function writeNormanError(res: http.ServerResponse, err: NormanError): void {
  const body =
    JSON.stringify({
      Code: { Code: err.code, Status: err.status },
      Message: err.message,
      Cause: null,
      FieldName: '',
    }) + '\n';
  res.writeHead(err.status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** Rancher's proxy to the downstream cluster impersonates the authenticated user. */
export function impersonationHeaders(who: Identity): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = { 'Impersonate-User': who.username };
  if (who.groups.length > 0) headers['Impersonate-Group'] = who.groups;
  for (const [key, values] of Object.entries(who.extra ?? {})) {
    const present = values.filter(Boolean);
    if (present.length > 0) headers[`Impersonate-Extra-${encodeURIComponent(key)}`] = present;
  }
  return headers;
}
