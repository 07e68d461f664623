// The two documents a Harvester cloud credential is made of in Rancher: the kubeconfig that
// generateKubeconfig returns for the Harvester cluster (server
// https://<rancher>/k8s/clusters/<clusterId>, token "<name>:<secret>"; rancher
// pkg/kubeconfig), and the Secret in cattle-global-data that holds it, with the expiry
// annotation Rancher >= 2.9.3 writes (Unix milliseconds of the token's expiresAt).
import { CREDENTIAL_LABEL } from '../../src/controller/constants.js';
import { parse, stringify } from 'yaml';
import type { KubeClient } from '../../src/kube/client.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { registerSecret } from '../../src/log/redact.js';
import {
  ANNOTATION_CREDENTIAL_EXPIRATION,
  CLOUD_CREDENTIAL_NAMESPACE,
  CREDENTIAL_KEY_CLUSTER_ID,
  CREDENTIAL_KEY_CLUSTER_TYPE,
  CREDENTIAL_KEY_KUBECONFIG,
} from '../../src/rancher/cloud-credential.js';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** The kubeconfig Rancher generates for a downstream cluster (cluster, user and context share a name). */
export function rancherKubeconfig(opts: {
  /** Where Rancher is reached, e.g. https://127.0.0.1:8443 */
  proxyUrl: string;
  clusterId: string;
  caPem: string;
  /** "<name>:<secret>" */
  token: string;
  /** The cluster's display name (Rancher falls back to the id). */
  clusterName?: string;
}): string {
  registerSecret(opts.token);
  const name = opts.clusterName || opts.clusterId;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: {
          server: `${opts.proxyUrl.replace(/\/+$/, '')}/k8s/clusters/${opts.clusterId}`,
          'certificate-authority-data': b64(opts.caPem),
        },
      },
    ],
    users: [{ name, user: { token: opts.token } }],
    contexts: [{ name, context: { user: name, cluster: name } }],
    'current-context': name,
  });
}

export interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** The cluster id in a Rancher kubeconfig's server URL (…/k8s/clusters/<id>), if any. */
export function clusterIdFromKubeconfig(kubeconfig: string): string | undefined {
  const doc = parse(kubeconfig) as { clusters?: Array<{ cluster?: { server?: string } }> } | null;
  for (const c of doc?.clusters ?? []) {
    const match = /\/k8s\/clusters\/([^/]+)/.exec(c.cluster?.server ?? '');
    if (match?.[1]) return match[1];
  }
  return undefined;
}

/** The Secret Rancher keeps a Harvester cloud credential in (not written anywhere yet). */
export function harvesterCloudCredential(opts: {
  name: string;
  kubeconfig: string;
  /** The token's expiry; no annotation when the token never expires. */
  expiresAt?: Date;
  /** Default: taken from the kubeconfig's server URL. */
  clusterId?: string;
  /** "imported" for a Harvester cluster imported into Rancher (default), "external" otherwise. */
  clusterType?: string;
  displayName?: string;
}): SecretObject {
  registerSecret(opts.kubeconfig);
  const clusterId = opts.clusterId ?? clusterIdFromKubeconfig(opts.kubeconfig) ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: opts.name,
      namespace: CLOUD_CREDENTIAL_NAMESPACE,
      // As the chart README asks operators to label their Harvester credentials.
      labels: { [CREDENTIAL_LABEL]: 'true' },
      annotations: {
        'field.cattle.io/name': opts.displayName ?? opts.name,
        'provisioning.cattle.io/driver': 'harvester',
        ...(opts.expiresAt ? { [ANNOTATION_CREDENTIAL_EXPIRATION]: String(opts.expiresAt.getTime()) } : {}),
      },
    },
    type: 'provisioning.cattle.io/cloud-credential',
    data: {
      [CREDENTIAL_KEY_CLUSTER_ID]: b64(clusterId),
      [CREDENTIAL_KEY_CLUSTER_TYPE]: b64(opts.clusterType ?? 'imported'),
      [CREDENTIAL_KEY_KUBECONFIG]: b64(opts.kubeconfig),
    },
  };
}

/**
 * Saves a cloud credential as Rancher's credential store does: created when new, otherwise
 * updated in place (same name), which is how Renew replaces the kubeconfig.
 */
export async function saveHarvesterCloudCredential(
  rancher: KubeClient,
  secret: SecretObject,
): Promise<SecretObject> {
  try {
    await rancher.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: CLOUD_CREDENTIAL_NAMESPACE },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  const at = { namespace: CLOUD_CREDENTIAL_NAMESPACE, name: secret.metadata.name };
  const existing = await rancher.find<SecretObject>(Resources.secret, at);
  if (!existing) return rancher.create<SecretObject>(Resources.secret, secret);
  return rancher.update<SecretObject>(Resources.secret, {
    ...secret,
    metadata: { ...existing.metadata, annotations: secret.metadata.annotations ?? {} },
  });
}
