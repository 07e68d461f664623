// The objects virt-operator would install for virt-api and virt-controller (build-kubevirt.sh
// writes them, one JSON object per line, from virt-operator's own generators), sorted by what
// the sandbox does with each, and pointed at a virt-api on loopback:
// - the admission webhooks through `clientConfig.url` (a Service cannot point at 127.0.0.1);
// - the APIServices through a Service of type ExternalName, which the aggregator resolves to
//   its host name (k8s.io/apiserver pkg/util/proxy ResolveCluster), with virt-api's port.
import fs from 'node:fs/promises';
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { SandboxResources } from '../capi/resources.js';

export interface KubeVirtManifests {
  crds: KubeObject[];
  /** ServiceAccounts, roles and bindings, in virt-operator's order. */
  rbac: Array<{ type: ResourceType; object: KubeObject }>;
  webhooks: Array<{ type: ResourceType; object: WebhookConfiguration }>;
  apiServices: ApiService[];
}

export interface WebhookConfiguration extends KubeObject {
  webhooks?: Array<{
    name: string;
    clientConfig: { service?: { path?: string }; url?: string; caBundle?: string };
    [k: string]: unknown;
  }>;
}

export interface ApiService extends KubeObject {
  spec: {
    service?: { namespace: string; name: string; port?: number };
    caBundle?: string;
    [k: string]: unknown;
  };
}

export interface VirtApiEndpoint {
  /** virt-api's TLS port on 127.0.0.1. */
  port: number;
  /** The CA that issued virt-api's serving certificate. */
  caPem: string;
}

const RBAC_TYPES: Record<string, ResourceType> = {
  ServiceAccount: Resources.serviceAccount,
  ClusterRole: Resources.clusterRole,
  ClusterRoleBinding: Resources.clusterRoleBinding,
  Role: Resources.role,
  RoleBinding: Resources.roleBinding,
};

/** Go's zero values the generator marshals and the apiserver would refuse or rewrite. */
function tidy<T extends KubeObject>(object: T): T {
  const { creationTimestamp: _created, ...metadata } = object.metadata as KubeObject['metadata'] & {
    creationTimestamp?: unknown;
  };
  const { status: _status, ...rest } = object as T & { status?: unknown };
  return { ...rest, metadata } as T;
}

export async function loadManifests(file: string): Promise<KubeVirtManifests> {
  const manifests: KubeVirtManifests = { crds: [], rbac: [], webhooks: [], apiServices: [] };
  for (const line of (await fs.readFile(file, 'utf8')).split('\n')) {
    if (!line.trim()) continue;
    const object = tidy(JSON.parse(line) as KubeObject);
    const kind = object.kind ?? '';
    if (kind === 'CustomResourceDefinition') manifests.crds.push(object);
    else if (kind === 'APIService') manifests.apiServices.push(object as ApiService);
    else if (kind === 'MutatingWebhookConfiguration')
      manifests.webhooks.push({ type: SandboxResources.mutatingWebhookConfiguration, object });
    else if (kind === 'ValidatingWebhookConfiguration')
      manifests.webhooks.push({ type: SandboxResources.validatingWebhookConfiguration, object });
    else {
      const type = RBAC_TYPES[kind];
      if (!type) throw new Error(`KubeVirt manifests: unexpected kind ${kind} in ${file}`);
      manifests.rbac.push({ type, object });
    }
  }
  return manifests;
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** virt-api's webhook configurations, each webhook calling https://127.0.0.1:<port><its path>. */
export function webhooksAt(
  manifests: KubeVirtManifests,
  endpoint: VirtApiEndpoint,
): Array<{ type: ResourceType; object: WebhookConfiguration }> {
  return manifests.webhooks.map(({ type, object }) => ({
    type,
    object: {
      ...object,
      webhooks: (object.webhooks ?? []).map((w) => ({
        ...w,
        clientConfig: {
          url: `https://127.0.0.1:${endpoint.port}${w.clientConfig.service?.path ?? '/'}`,
          caBundle: b64(endpoint.caPem),
        },
      })),
    },
  }));
}

/** The APIServices, through the ExternalName Service `virtApiService()` names, on virt-api's port. */
export function apiServicesAt(manifests: KubeVirtManifests, endpoint: VirtApiEndpoint): ApiService[] {
  return manifests.apiServices.map((s) => ({
    ...s,
    spec: {
      ...s.spec,
      ...(s.spec.service ? { service: { ...s.spec.service, port: endpoint.port } } : {}),
      caBundle: b64(endpoint.caPem),
    },
  }));
}

/**
 * The Service the APIServices name, as an ExternalName for 127.0.0.1: the aggregator's
 * resolver takes an ExternalName's host as is, while Endpoints refuse loopback addresses.
 */
export function virtApiService(manifests: KubeVirtManifests): KubeObject {
  const ref = manifests.apiServices[0]?.spec.service;
  if (!ref) throw new Error('KubeVirt manifests: no APIService names virt-api');
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: ref.namespace, name: ref.name, labels: { 'kubevirt.io': 'virt-api' } },
    spec: { type: 'ExternalName', externalName: '127.0.0.1' },
  } as KubeObject;
}
