// Kubernetes Status objects exactly as the apiserver writes them: field order and omitted
// empty fields as Go's encoding/json gives them (k8s.io/apimachinery metav1.Status, api/errors
// constructors), compact with a newline.
import type http from 'node:http';

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: Array<{ message: string }>;
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** Drops the fields Go would omit (omitempty) while keeping the order of StatusDetails. */
function details(d: StatusDetails): StatusDetails {
  const out: StatusDetails = {};
  if (d.name) out.name = d.name;
  if (d.group) out.group = d.group;
  if (d.kind) out.kind = d.kind;
  if (d.causes?.length) out.causes = d.causes;
  if (d.retryAfterSeconds) out.retryAfterSeconds = d.retryAfterSeconds;
  return out;
}

export function failure(code: number, reason: string, message: string, d?: StatusDetails): Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    ...(message ? { message } : {}),
    ...(reason ? { reason } : {}),
    ...(d ? { details: details(d) } : {}),
    code,
  };
}

/** A group/resource as Go's schema.GroupResource prints it: "virtualmachine.kubevirt.io". */
export interface GroupResource {
  group: string;
  resource: string;
}

const grString = (gr: GroupResource): string => (gr.group ? `${gr.resource}.${gr.group}` : gr.resource);

export function forbidden(gr: GroupResource, name: string, cause: string): Status {
  let message: string;
  if (!gr.group && !gr.resource) message = `forbidden: ${cause}`;
  else if (!name) message = `${grString(gr)} is forbidden: ${cause}`;
  else message = `${grString(gr)} "${name}" is forbidden: ${cause}`;
  return failure(403, 'Forbidden', message, { name, group: gr.group, kind: gr.resource });
}

export function internalError(cause: string): Status {
  return failure(500, 'InternalError', `Internal error occurred: ${cause}`, { causes: [{ message: cause }] });
}

/** As kube-apiserver answers: compact JSON and a newline. */
export function writeApiserverStatus(
  res: http.ServerResponse,
  status: Status,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify(status) + '\n';
  res.writeHead(status.code, {
    'Cache-Control': 'no-cache, private',
    'Content-Type': 'application/json',
    ...(status.code === 403 ? { 'X-Content-Type-Options': 'nosniff' } : {}),
    ...headers,
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}
