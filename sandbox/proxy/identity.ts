// What a caller may do, decided by the real apiserver: a SubjectAccessReview against the real
// RBAC, as Rancher's proxy has its own checks decided. Denials are worded exactly as
// kube-apiserver words them (apiserver endpoints/handlers/responsewriters).
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject, type NewObject } from '../../src/kube/resources.js';
import { forbidden, type Status } from './status.js';

export interface Identity {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export interface ResourceAttributes {
  verb: string;
  group: string;
  version?: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export type Attributes = { resource: ResourceAttributes } | { path: string; verb: string };

interface SubjectAccessReview extends KubeObject {
  status?: { allowed?: boolean; denied?: boolean; reason?: string };
}

/** undefined when allowed; otherwise the Status the apiserver answers with (403). */
export async function authorize(
  admin: KubeClient,
  who: Identity,
  attributes: Attributes,
): Promise<Status | undefined> {
  const review = await admin.create<SubjectAccessReview>(Resources.subjectAccessReview, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: {
      user: who.username,
      groups: who.groups,
      ...(who.uid ? { uid: who.uid } : {}),
      ...(who.extra ? { extra: who.extra } : {}),
      ...('resource' in attributes
        ? { resourceAttributes: attributes.resource }
        : { nonResourceAttributes: { path: attributes.path, verb: attributes.verb } }),
    },
  } as NewObject<SubjectAccessReview>);
  if (review.status?.allowed) return undefined;
  return forbiddenFor(who.username, attributes, review.status?.reason);
}

/** kube-apiserver's denial for these attributes, optionally followed by the authorizer's reason. */
export function forbiddenFor(username: string, attributes: Attributes, reason?: string): Status {
  let message: string;
  if ('resource' in attributes) {
    const a = attributes.resource;
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
    message = `User "${username}" cannot ${a.verb} resource "${resource}" in API group "${a.group}" ${scope}`;
  } else {
    message = `User "${username}" cannot ${attributes.verb} path "${attributes.path}"`;
  }
  if (reason) message += `: ${reason}`;
  const gr =
    'resource' in attributes
      ? { group: attributes.resource.group, resource: attributes.resource.resource }
      : { group: '', resource: '' };
  const name = 'resource' in attributes ? (attributes.resource.name ?? '') : '';
  return forbidden(gr, name, message);
}
