// Reaching a guest cluster the way Cluster API and Rancher do: through its `<cluster>-kubeconfig`
// Secret in Rancher's local cluster. One client per Secret version (a rewritten Secret gets a
// new one); closed together.
import { keyText } from '../../src/api/object-key.js';
import { GUEST_KUBECONFIG_KEY, guestKubeconfigSecretName } from '../../src/rancher/names.js';
import { KubeClient } from '../../src/kube/client.js';
import { Resources } from '../../src/kube/resources.js';
import type { Secret } from '../../src/api/core.js';

export class GuestKubeconfigs {
  private readonly clients = new Map<string, { version: string; client: KubeClient }>();

  constructor(private readonly rancher: KubeClient) {}

  /** The guest's kubeconfig text; undefined while Rancher has not written it. */
  async kubeconfig(namespace: string, cluster: string): Promise<string | undefined> {
    const secret = await this.secret(namespace, cluster);
    const value = secret?.data?.[GUEST_KUBECONFIG_KEY];
    return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
  }

  /** A client for the guest's apiserver; throws while its Secret does not exist yet. */
  async client(namespace: string, cluster: string): Promise<KubeClient> {
    const secret = await this.secret(namespace, cluster);
    const value = secret?.data?.[GUEST_KUBECONFIG_KEY];
    if (!secret || value === undefined)
      throw new Error(
        `guest cluster ${keyText(namespace, cluster)} has no kubeconfig yet (Secret ${guestKubeconfigSecretName(cluster)})`,
      );
    const key = keyText(namespace, cluster);
    const version = secret.metadata.resourceVersion ?? '';
    const known = this.clients.get(key);
    if (known?.version === version) return known.client;
    known?.client.close();
    const client = KubeClient.fromKubeconfig(Buffer.from(value, 'base64').toString('utf8'), {
      requestTimeoutMs: 10_000,
    });
    this.clients.set(key, { version, client });
    return client;
  }

  private secret(namespace: string, cluster: string): Promise<Secret | undefined> {
    return this.rancher.find<Secret>(Resources.secret, {
      namespace,
      name: guestKubeconfigSecretName(cluster),
    });
  }

  close(): void {
    for (const { client } of this.clients.values()) client.close();
    this.clients.clear();
  }
}
