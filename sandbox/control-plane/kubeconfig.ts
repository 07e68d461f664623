// Kubeconfig documents for the sandbox's users, written with a real YAML library.
import { stringify } from 'yaml';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

export interface KubeconfigUser {
  token?: string;
  /** A file holding the bearer token, re-read by client-go (as a pod's projected token). */
  tokenFile?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
}

export function buildKubeconfig(opts: {
  name: string;
  server: string;
  caPem: string;
  /** Names this file for the CA (which must hold caPem) instead of embedding it. */
  caFile?: string;
  user: KubeconfigUser;
}): string {
  const user: Record<string, string> = {};
  if (opts.user.token) user['token'] = opts.user.token;
  if (opts.user.tokenFile) user['tokenFile'] = opts.user.tokenFile;
  if (opts.user.clientCertPem) user['client-certificate-data'] = b64(opts.user.clientCertPem);
  if (opts.user.clientKeyPem) user['client-key-data'] = b64(opts.user.clientKeyPem);
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: opts.name,
        cluster: {
          server: opts.server,
          ...(opts.caFile
            ? { 'certificate-authority': opts.caFile }
            : { 'certificate-authority-data': b64(opts.caPem) }),
        },
      },
    ],
    users: [{ name: opts.name, user }],
    contexts: [{ name: opts.name, context: { cluster: opts.name, user: opts.name } }],
    'current-context': opts.name,
  });
}
