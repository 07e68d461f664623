// Installs Cluster API's CRDs and webhook configuration from the module (build-cluster-api.sh),
// pointed at the manager's own webhook server on 127.0.0.1 through `clientConfig.url` (a
// Service cannot point at loopback): the admission webhooks as upstream's config/webhook
// declares them, and, on CRDs serving more than one version (v1beta1 beside a stored v1beta2),
// the conversion webhook upstream's config/crd/patches add. Idempotent: an existing object is
// replaced, so a restarted sandbox with a new port and CA is pointed right.
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject, ResourceType } from '../../src/kube/resources.js';
import { createOrReplace, installEstablished } from '../crds/install.js';
import { SandboxResources } from './resources.js';

export interface WebhookEndpoint {
  /** https://127.0.0.1:<port> */
  url: string;
  caPem: string;
}

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
}
interface Crd extends KubeObject {
  spec: { group: string; versions: CrdVersion[]; conversion?: unknown };
  status?: { conditions?: Array<{ type: string; status: string }> };
}
interface Webhook {
  name: string;
  clientConfig: { service?: { path?: string }; url?: string; caBundle?: string };
  [k: string]: unknown;
}
interface WebhookConfiguration extends KubeObject {
  webhooks?: Webhook[];
}

/** Rancher marks the CAPI CRDs it installs (rancher/rancher pkg/crds/provisioningv2). */
const RANCHER_CRD_LABEL = { 'auth.cattle.io/cluster-indexed': 'true' };

async function yamlObjects<T>(file: string): Promise<T[]> {
  return parseAllDocuments(await fs.readFile(file, 'utf8'))
    .map((d) => d.toJS() as T | null)
    .filter((o): o is T => o !== null);
}

/** The module's CRDs, with the conversion webhook where more than one version is served. */
export async function clusterApiCrds(crdDir: string, endpoint: WebhookEndpoint): Promise<Crd[]> {
  const files = (await fs.readdir(crdDir)).filter((f) => f.endsWith('.yaml')).sort();
  const crds: Crd[] = [];
  for (const file of files) {
    for (const crd of await yamlObjects<Crd>(path.join(crdDir, file))) {
      if (crd.kind !== 'CustomResourceDefinition') continue;
      crd.metadata.labels = { ...crd.metadata.labels, ...RANCHER_CRD_LABEL };
      if (crd.spec.versions.filter((v) => v.served).length > 1)
        crd.spec.conversion = {
          strategy: 'Webhook',
          webhook: {
            conversionReviewVersions: ['v1'],
            clientConfig: { url: `${endpoint.url}/convert`, caBundle: b64(endpoint.caPem) },
          },
        };
      crds.push(crd);
    }
  }
  return crds;
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** upstream's webhook configurations, named as clusterctl names them (capi- prefix), with a URL. */
export async function clusterApiWebhooks(
  manifest: string,
  endpoint: WebhookEndpoint,
): Promise<Array<{ type: ResourceType; object: WebhookConfiguration }>> {
  const out: Array<{ type: ResourceType; object: WebhookConfiguration }> = [];
  for (const cfg of await yamlObjects<WebhookConfiguration>(manifest)) {
    const type =
      cfg.kind === 'MutatingWebhookConfiguration'
        ? SandboxResources.mutatingWebhookConfiguration
        : cfg.kind === 'ValidatingWebhookConfiguration'
          ? SandboxResources.validatingWebhookConfiguration
          : undefined;
    if (!type) continue;
    out.push({
      type,
      object: {
        ...cfg,
        metadata: { name: `capi-${cfg.metadata.name}` },
        webhooks: (cfg.webhooks ?? []).map((w) => ({
          ...w,
          clientConfig: {
            url: `${endpoint.url}${w.clientConfig.service?.path ?? '/'}`,
            caBundle: b64(endpoint.caPem),
          },
        })),
      },
    });
  }
  return out;
}

/** The CRDs, Established; install them before kube-controller-manager starts (its garbage collector). */
export async function installClusterApiCrds(
  admin: KubeClient,
  crdDir: string,
  endpoint: WebhookEndpoint,
  timeoutMs = 30_000,
): Promise<string[]> {
  return installEstablished(admin, await clusterApiCrds(crdDir, endpoint), {
    timeoutMs,
    existing: 'replace',
  });
}

/** The admission webhooks: registered only once the manager serves them (failurePolicy Fail). */
export async function installClusterApiWebhooks(
  admin: KubeClient,
  manifest: string,
  endpoint: WebhookEndpoint,
): Promise<string[]> {
  const configs = await clusterApiWebhooks(manifest, endpoint);
  for (const { type, object } of configs) await createOrReplace(admin, type, object);
  return configs.map((c) => c.object.metadata.name);
}

export async function uninstallClusterApiWebhooks(admin: KubeClient, manifest: string): Promise<void> {
  const configs = await clusterApiWebhooks(manifest, { url: 'https://127.0.0.1', caPem: '' });
  for (const { type, object } of configs) await admin.delete(type, { name: object.metadata.name });
}
