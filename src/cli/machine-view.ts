// What ls and inspect show about a stored machine, from its saved config alone (pure):
// where its VM is, its address, and its credential described without any secret.
import { parseFixedAddress, type FixedAddress } from '../harvester/fixed-addresses/address-claims.js';
import type { KubeconfigTrust } from '../kube/credential-content.js';
import { describeKubeconfig, loadKubeconfig } from '../kube/kubeconfig-content.js';
import { describeCredential } from '../kube/credential.js';
import type { HostConfig } from './store/host-config.js';
import { keyText } from '../api/object-key.js';

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
  /**
   * Where the IP came from: 'pool' (the driver's claim on --harvester-ip-pool-info's pool),
   * 'harvester-ippool' (Harvester's IP pool), 'guest-agent', or '' (none yet).
   */
  addressSource: FixedAddress['source'] | 'guest-agent' | '';
  /** The fixed address and who holds it; null without --harvester-ip-pool-info. */
  fixedAddress: FixedAddress | null;
  credential: CredentialSummary | { error: string };
}

/** The fixed address as saved under HarvesterMachine (null when none or unreadable). */
function savedFixedAddress(driver: Record<string, unknown>): FixedAddress | null {
  const options = driver['HarvesterMachine'];
  const raw =
    options && typeof options === 'object' ? (options as Record<string, unknown>)['FixedAddress'] : undefined;
  return raw && typeof raw === 'object' ? (parseFixedAddress(JSON.stringify(raw)) ?? null) : null;
}

/** "192.168.100.10/24 on nic-0 of default/vlan100, held by ConfigMap hm-ip-…" for people. */
export function describeFixedAddress(f: FixedAddress): string {
  const holder =
    f.source === 'pool' ? `claimed as ConfigMap ${f.holder}` : `bound by Harvester's IP pool ${f.holder}`;
  return `${f.address}/${f.prefix} on ${f.interface} of ${f.network} (MAC ${f.mac}), ${holder}`;
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
  const fixedAddress = savedFixedAddress(d);
  const ip = str(d['IPAddress']);
  return {
    name: host.Name,
    namespace,
    vm: keyText(namespace, name),
    clusterName: str(d['ClusterName']),
    ip,
    ipv6: str(d['IPv6Address']),
    addressSource:
      fixedAddress && fixedAddress.address === ip ? fixedAddress.source : ip ? 'guest-agent' : '',
    fixedAddress,
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
