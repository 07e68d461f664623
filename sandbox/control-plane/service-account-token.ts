// A token for a ServiceAccount through the TokenRequest API, as the kubelet obtains the
// projected token it mounts into a pod: what a pod of the chart authenticates with.
import { keyText } from '../../src/api/object-key.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, resourcePath } from '../../src/kube/resources.js';
import { recordSecret } from '../secret-ledger.js';

export async function serviceAccountToken(
  admin: KubeClient,
  at: { namespace: string; name: string },
  expirationSeconds = 3600,
): Promise<string> {
  const answer = await admin.call<{ status?: { token?: string } }>({
    method: 'POST',
    path: resourcePath(Resources.serviceAccount, { ...at, subresource: 'token' }),
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds },
    },
    operation: `create serviceaccounts/token ${keyText(at.namespace, at.name)}`,
  });
  const token = answer.status?.token;
  if (!token) throw new Error(`TokenRequest for ${keyText(at.namespace, at.name)} answered no token`);
  // The secrets scan after the suite looks for it (no-op outside the suite).
  recordSecret(`service account token ${keyText(at.namespace, at.name)}`, token);
  return token;
}
