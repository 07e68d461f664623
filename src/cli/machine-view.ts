// What ls and inspect show about a stored machine, from its saved config alone (pure):
// where its VM is, its address, and its credential described without any secret.
import type { KubeconfigTrust } from '../kube/credential-content.js';
import { describeKubeconfig, loadKubeconfig } from '../kube/kubeconfig-content.js';
import { describeCredential } from '../kube/credential.js';
import type { HostConfig } from './store/host-config.js';

export interface CredentialSummary {
  server: string;
  /** "Rancher token kubeconfig-u-abc12", "bootstrap token a1b2c3", "client certificate CN", ... */
  identity: string;
  /** When the credential itself says (JWT exp, certificate validity); null when it does not. */
  expiresAt: string | null;
}

export interface MachineSummary {
  name: string;
  namespace: string;
  vm: string;
  clusterName: string;
  ip: string;
  ipv6: string;
  credential: CredentialSummary | { error: string };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** `trust`: a stored machine's kubeconfig is the operator's; doctor says whose it checks. */
export function describeSavedCredential(
  kubeconfig: string,
  trust: KubeconfigTrust = 'operator',
): CredentialSummary | { error: string } {
  if (!kubeconfig) return { error: 'no kubeconfig saved (the driver falls back to $KUBECONFIG)' };
  try {
    const { server } = describeKubeconfig(kubeconfig, trust);
    const credential = describeCredential(loadKubeconfig(kubeconfig, trust));
    return {
      server,
      identity: credential.identity ?? 'no credential',
      expiresAt: credential.expiresAt?.toISOString() ?? null,
    };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

export function summarize(host: HostConfig): MachineSummary {
  const d = host.Driver;
  const namespace = str(d['VMNamespace']);
  const name = str(d['MachineName']) || host.Name;
  return {
    name: host.Name,
    namespace,
    vm: `${namespace}/${name}`,
    clusterName: str(d['ClusterName']),
    ip: str(d['IPAddress']),
    ipv6: str(d['IPv6Address']),
    credential: describeSavedCredential(str(d['KubeConfigContent'])),
  };
}

/** Driver fields that hold secrets: shown as "[REDACTED]" by inspect. */
const SECRET_FIELDS = ['KubeConfigContent', 'SSHPassword'];

/** The saved config.json for people: secrets replaced, everything else as stored. */
export function redactedHost(host: HostConfig): HostConfig {
  const driver: Record<string, unknown> = { ...host.Driver };
  for (const field of SECRET_FIELDS) {
    if (typeof driver[field] === 'string' && driver[field] !== '') driver[field] = '[REDACTED]';
  }
  return { ...host, Driver: driver };
}
