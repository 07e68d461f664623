// The subresources.kubevirt.io API as a caller sees it through the apiserver's aggregator:
// the apiserver authorizes the request (403 in its words), then virt-api answers start, stop
// and restart (kubevirt v1.7.0) by writing a state change request or a run strategy into the
// VM with its own credential. Only those three subresources and discovery are served.
import type http from 'node:http';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, resourcePath } from '../../src/kube/resources.js';
import { authorize, rbacVerb, type Identity } from './identity.js';
import {
  decideRestart,
  decideStart,
  decideStop,
  type Decision,
  type LifecycleAction,
  type VmView,
  type VmiView,
} from './state-change.js';
import {
  badRequest,
  conflict,
  failure,
  internalError,
  notFound,
  writeApiserverStatus,
  writeVirtApiJson,
  writeVirtApiStatus,
} from './status.js';

export const SUBRESOURCE_GROUP = 'subresources.kubevirt.io';
const GROUP_PREFIX = `/apis/${SUBRESOURCE_GROUP}`;
const VERSIONS = ['v1', 'v1alpha3'];
const LIFECYCLE: LifecycleAction[] = ['start', 'stop', 'restart'];
/** How virt-api names the VM in its answers: v1.Resource("virtualmachine"). */
const VM_RESOURCE = { group: 'kubevirt.io', resource: 'virtualmachine' };
/** apiserver answers that a string in the patch error means a failed "test" operation. */
const JSON_PATCH_TEST_FAILED = 'jsonpatch test operation does not apply';

export function isSubresourcePath(path: string): boolean {
  return path === GROUP_PREFIX || path.startsWith(`${GROUP_PREFIX}/`);
}

export interface VirtApiRequest {
  method: string;
  /** Decoded path, without any /k8s/clusters/<id> prefix. */
  path: string;
  body: string;
}

export async function serveVirtApi(
  admin: KubeClient,
  who: Identity,
  req: VirtApiRequest,
  res: http.ServerResponse,
): Promise<void> {
  const parts = req.path.split('/').map((p) => decodeURIComponent(p));
  // ['', 'apis', group, version, 'namespaces', ns, resource, name, subresource, ...]
  const version = parts[3];
  if (version === undefined || version === '') return discovery(admin, who, req, res, undefined);
  if (!VERSIONS.includes(version)) return writeApiserverStatus(res, pageNotFound());
  if (parts.length === 4) return discovery(admin, who, req, res, version);
  const [, , , , namespacesWord, namespace, resource, name, subresource] = parts;
  if (namespacesWord !== 'namespaces' || !namespace || !resource || !name || !subresource) {
    return writeApiserverStatus(res, pageNotFound());
  }
  const verb = rbacVerb(req.method, true) ?? req.method.toLowerCase();
  const denied = await authorize(admin, who, {
    resource: { verb, group: SUBRESOURCE_GROUP, version, resource, subresource, namespace, name },
  });
  if (denied) return writeApiserverStatus(res, denied);
  if (
    resource !== 'virtualmachines' ||
    !LIFECYCLE.includes(subresource as LifecycleAction) ||
    parts.length > 9
  ) {
    return writeApiserverStatus(
      res,
      failure(
        404,
        'NotFound',
        `the sandbox's virt-api serves only virtualmachines/{start,stop,restart}, not ${resource}/${subresource}`,
      ),
    );
  }
  if (req.method !== 'PUT') {
    res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('405: Method Not Allowed');
    return;
  }
  await lifecycle(admin, subresource as LifecycleAction, namespace, name, req.body, res);
}

function pageNotFound(): ReturnType<typeof failure> {
  return failure(404, 'NotFound', 'the server could not find the requested resource', {});
}

async function discovery(
  admin: KubeClient,
  who: Identity,
  req: VirtApiRequest,
  res: http.ServerResponse,
  version: string | undefined,
): Promise<void> {
  const denied = await authorize(admin, who, { path: req.path, verb: rbacVerb(req.method, true) ?? 'get' });
  if (denied) return writeApiserverStatus(res, denied);
  if (req.method !== 'GET')
    return writeApiserverStatus(
      res,
      failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {}),
    );
  if (version === undefined) {
    // The aggregator's group document.
    const versions = VERSIONS.map((v) => ({ groupVersion: `${SUBRESOURCE_GROUP}/${v}`, version: v }));
    const body = JSON.stringify({
      kind: 'APIGroup',
      apiVersion: 'v1',
      name: SUBRESOURCE_GROUP,
      versions,
      preferredVersion: versions[0],
    });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(body + '\n');
    return;
  }
  writeVirtApiJson(res, 200, {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: `${SUBRESOURCE_GROUP}/${version}`,
    resources: LIFECYCLE.map((sub) => ({
      name: `virtualmachines/${sub}`,
      singularName: '',
      namespaced: true,
      kind: '',
      verbs: null,
    })),
  });
}

interface Options {
  dryRun?: string[];
  gracePeriodSeconds?: number;
}

/** virt-api decodes an optional options body; an empty body means no options. */
function decodeOptions(body: string): Options | { error: string } {
  if (!body.trim()) return {};
  try {
    const parsed = JSON.parse(body) as unknown;
    return parsed && typeof parsed === 'object' ? parsed : {};
  } catch (err) {
    return { error: `Can not unmarshal Request body to struct, error: ${(err as Error).message}` };
  }
}

async function lifecycle(
  admin: KubeClient,
  action: LifecycleAction,
  namespace: string,
  name: string,
  body: string,
  res: http.ServerResponse,
): Promise<void> {
  const options = decodeOptions(body);
  if ('error' in options) return writeVirtApiStatus(res, badRequest(options.error));
  if (action === 'restart' && options.gracePeriodSeconds !== undefined) {
    if (options.gracePeriodSeconds > 0) {
      return writeVirtApiStatus(
        res,
        badRequest('For force restart, only gracePeriod=0 is supported for now'),
      );
    }
    if (options.gracePeriodSeconds < 0) {
      return writeVirtApiStatus(res, badRequest('gracePeriod has to be greater or equal to 0'));
    }
  }
  let vm: VmView | undefined;
  let vmi: VmiView | undefined;
  try {
    vm = await admin.find<VmView & { metadata: { name: string } }>(Resources.virtualMachine, {
      namespace,
      name,
    });
  } catch (err) {
    return writeVirtApiStatus(
      res,
      internalError(`unable to retrieve vm [${name}]: ${(err as Error).message}`),
    );
  }
  if (!vm) return writeVirtApiStatus(res, notFound(VM_RESOURCE, name));
  try {
    vmi = await admin.find<VmiView & { metadata: { name: string; uid?: string } }>(
      Resources.virtualMachineInstance,
      {
        namespace,
        name,
      },
    );
  } catch (err) {
    return writeVirtApiStatus(res, internalError((err as Error).message));
  }
  const decision: Decision =
    action === 'start'
      ? decideStart(vm, vmi)
      : action === 'stop'
        ? decideStop(vm, vmi)
        : decideRestart(vm, vmi);
  switch (decision.kind) {
    case 'conflict':
      return writeVirtApiStatus(res, conflict(VM_RESOURCE, name, decision.cause));
    case 'internal':
      return writeVirtApiStatus(res, internalError(decision.cause));
    case 'patch':
      break;
  }
  if (decision.ops.length > 0) {
    const path =
      resourcePath(Resources.virtualMachine, {
        namespace,
        name,
        ...(decision.target === 'status' ? { subresource: 'status' } : {}),
      }) + (options.dryRun?.includes('All') ? '?dryRun=All' : '');
    const failed = await jsonPatch(admin, path, decision.ops);
    if (failed !== undefined) {
      return writeVirtApiStatus(
        res,
        failed.includes(JSON_PATCH_TEST_FAILED) ? conflict(VM_RESOURCE, name, failed) : internalError(failed),
      );
    }
  }
  res.writeHead(202, { 'Content-Length': 0 });
  res.end();
}

/**
 * Sends a JSON patch once, without retries (virt-api's client does not retry it either);
 * resolves undefined on success, else with the apiserver's message.
 */
async function jsonPatch(admin: KubeClient, path: string, ops: unknown[]): Promise<string | undefined> {
  const { response } = await admin.transport.open({
    method: 'PATCH',
    path,
    body: JSON.stringify(ops),
    contentType: 'application/json-patch+json',
    operation: `patch ${path}`,
    timeoutMs: 10_000,
  });
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  const code = response.statusCode ?? 0;
  if (code >= 200 && code < 300) return undefined;
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return (JSON.parse(text) as { message?: string }).message ?? text;
  } catch {
    return text || `HTTP ${code}`;
  }
}
