// A Harvester cloud credential as Rancher keeps it: a Secret in cattle-global-data whose
// data holds the kubeconfig Rancher generated for the Harvester cluster and that cluster's
// id, annotated with the token's expiry by Rancher 2.9.3+. What the credential's keys
// are, and how its fields are decoded, is known here only.

/** Names Rancher gives a Harvester cloud credential (docs/upstream/rancher.md#cloud-credentials). */
export const CLOUD_CREDENTIAL_NAMESPACE = 'cattle-global-data';
export const CREDENTIAL_KEY_KUBECONFIG = 'harvestercredentialConfig-kubeconfigContent';
export const CREDENTIAL_KEY_CLUSTER_ID = 'harvestercredentialConfig-clusterId';
export const CREDENTIAL_KEY_CLUSTER_TYPE = 'harvestercredentialConfig-clusterType';
/** Unix milliseconds; set by Rancher 2.9.3+ on expiring Harvester credentials. */
export const ANNOTATION_CREDENTIAL_EXPIRATION = 'rancher.io/expiration-timestamp';

/** What this module reads of a cloud-credential Secret. */
export interface CloudCredentialSecret {
  metadata: { annotations?: Record<string, string> };
  /** base64 values, as the API returns them. */
  data?: Record<string, string>;
}

const decoded = (b64: string | undefined): string | undefined =>
  b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined;

export function isHarvesterCredential(secret: CloudCredentialSecret): boolean {
  return Boolean(secret.data?.[CREDENTIAL_KEY_KUBECONFIG]);
}

/**
 * The kubeconfig content as rancher-machine hands it to the driver (its
 * --harvester-kubeconfig-content): plain YAML as Rancher writes it, or base64 when
 * someone stored it so; undefined when the Secret holds none.
 */
export function credentialKubeconfig(secret: CloudCredentialSecret): string | undefined {
  return decoded(secret.data?.[CREDENTIAL_KEY_KUBECONFIG]);
}

/** The Harvester cluster's id in Rancher (c-m-…); undefined when the Secret holds none. */
export function harvesterClusterId(secret: CloudCredentialSecret): string | undefined {
  return decoded(secret.data?.[CREDENTIAL_KEY_CLUSTER_ID]);
}

/** `rancher.io/expiration-timestamp`, Unix milliseconds; undefined when absent or unreadable. */
export function expiryFromAnnotation(secret: CloudCredentialSecret): Date | undefined {
  const raw = secret.metadata.annotations?.[ANNOTATION_CREDENTIAL_EXPIRATION]?.trim();
  return raw && /^\d+$/.test(raw) ? new Date(Number(raw)) : undefined;
}
