// What Harvester says of the credential a client holds: does it answer at all (GET /version),
// who it takes the credential for (SelfSubjectReview) and whether that identity may do one
// thing (SelfSubjectAccessReview). Each throws the KubeError the call failed with; what a
// failure means (rejected, not served, unreachable) is the caller's decision.
import type { KubeClient } from '../kube/client.js';
import { Resources, type KubeObject, type NewObject } from '../kube/resources.js';

/** Who the server takes the credential for (fields absent when it does not say). */
export interface ReviewedUser {
  username?: string;
  groups?: string[];
}

/** One thing to ask about: a resource, verb, optional subresource, optional namespace. */
export interface AccessQuestion {
  group: string;
  resource: string;
  verb: string;
  subresource?: string;
  namespace?: string;
}

interface SelfSubjectReview extends KubeObject {
  status?: { userInfo?: ReviewedUser };
}

interface SelfSubjectAccessReview extends KubeObject {
  status?: { allowed?: boolean; reason?: string };
}

/** GET /version: resolves when the server answers 2xx, else throws its KubeError. */
export async function askVersion(client: KubeClient): Promise<void> {
  await client.call({ method: 'GET', path: '/version', operation: 'get /version' });
}

/** SelfSubjectReview: the identity the server gives the credential (undefined when it says none). */
export async function reviewSelf(client: KubeClient): Promise<ReviewedUser | undefined> {
  const review = await client.create<SelfSubjectReview>(Resources.selfSubjectReview, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
    metadata: {},
  });
  return review.status?.userInfo;
}

/** SelfSubjectAccessReview: may the credential's identity do `question`? */
export async function reviewAccess(client: KubeClient, question: AccessQuestion): Promise<boolean> {
  const { group, resource, verb, subresource, namespace } = question;
  const review = await client.create<SelfSubjectAccessReview>(Resources.selfSubjectAccessReview, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    metadata: {},
    spec: {
      resourceAttributes: {
        group,
        resource,
        verb,
        ...(subresource ? { subresource } : {}),
        ...(namespace !== undefined ? { namespace } : {}),
      },
    },
  } as NewObject<SelfSubjectAccessReview>);
  return review.status?.allowed === true;
}
