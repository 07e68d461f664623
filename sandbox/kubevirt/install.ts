// Installs what virt-operator installs for virt-api and virt-controller, from virt-operator's own
// generators (manifests.ts): the CRDs (before kube-controller-manager starts, so its garbage
// collector knows them), the namespace, the components' RBAC, the KubeVirt CR, the CA bundle
// ConfigMap virt-api reads, the Service the APIServices name, and, once virt-api serves, its
// admission webhooks and APIServices. Idempotent: an existing object is replaced, so a restarted
// sandbox with new ports and a new CA is pointed right.
import type { KubeClient } from '../../src/kube/client.js';
import { keyOf } from '../../src/api/object-key.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { createOrReplace, installEstablished } from '../crds/install.js';
import { installKubeVirtCr } from './kubevirt-cr.js';
import {
  apiServicesAt,
  virtApiService,
  webhooksAt,
  type KubeVirtManifests,
  type VirtApiEndpoint,
} from './manifests.js';
import { KubeVirtResources } from './resources.js';
import { KUBEVIRT_NAMESPACE } from './version.js';

/** virt-api's CA bundle ConfigMap (virt-operator components.KubeVirtCASecretName / CABundleKey). */
const KUBEVIRT_CA_CONFIGMAP = 'kubevirt-ca';
const CA_BUNDLE_KEY = 'ca-bundle';

/** The CRDs, Established; run it before kube-controller-manager starts. */
export async function installKubeVirtCrds(
  admin: KubeClient,
  manifests: KubeVirtManifests,
  timeoutMs = 60_000,
): Promise<string[]> {
  return installEstablished(admin, manifests.crds, { timeoutMs, existing: 'replace' });
}

/** Everything but the webhooks and APIServices: what virt-api and virt-controller need to start. */
export async function installKubeVirt(
  admin: KubeClient,
  manifests: KubeVirtManifests,
  caPem: string,
): Promise<void> {
  await createOrReplace(admin, Resources.namespace, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: KUBEVIRT_NAMESPACE },
  });
  // Roles before their bindings: the order virt-operator's generators give.
  for (const { type, object } of manifests.rbac) await createOrReplace(admin, type, object);
  await createOrReplace(admin, Resources.configMap, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: KUBEVIRT_NAMESPACE, name: KUBEVIRT_CA_CONFIGMAP },
    data: { [CA_BUNDLE_KEY]: caPem },
  } as KubeObject);
  await createOrReplace(admin, KubeVirtResources.service, virtApiService(manifests));
  await installKubeVirtCr(admin);
}

/** virt-api's admission webhooks and APIServices: registered once it serves them. */
export async function registerVirtApi(
  admin: KubeClient,
  manifests: KubeVirtManifests,
  endpoint: VirtApiEndpoint,
): Promise<void> {
  for (const { type, object } of webhooksAt(manifests, endpoint)) await createOrReplace(admin, type, object);
  for (const s of apiServicesAt(manifests, endpoint))
    await createOrReplace(admin, KubeVirtResources.apiService, s);
}

/** Deregisters them first when virt-api stops, so the apiserver does not call a server that is gone. */
export async function deregisterVirtApi(admin: KubeClient, manifests: KubeVirtManifests): Promise<void> {
  for (const { type, object } of manifests.webhooks)
    await admin.delete(type, keyOf(object)).catch(() => undefined);
  for (const s of manifests.apiServices)
    await admin.delete(KubeVirtResources.apiService, keyOf(s)).catch(() => undefined);
}
