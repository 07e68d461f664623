// The controller's configuration: flags first, then environment variables (Helm sets
// those), then defaults. Parsing is pure; main.ts reads files and the environment.
import { parseArgs } from 'node:util';
import { DurationError, parseDuration as parseGoDuration } from '../common/durations.js';
import { CLOUD_CREDENTIAL_NAMESPACE } from '../rancher/cloud-credential.js';
import { DEFAULT_HOOK_NAME } from './constants.js';

export interface ControllerConfig {
  /** Path of the Rancher local cluster's kubeconfig; undefined = in-cluster service account. */
  kubeconfigPath: string | undefined;
  /** Namespaces holding the provisioning clusters and machines; [] = all namespaces. */
  namespaces: string[];
  credentialNamespace: string;
  hookName: string;
  /** After a Machine's deletion, how long a failing cleanup may hold its gate. */
  gateDeadlineMs: number;
  /** How often each credential is probed through Harvester. */
  probeIntervalMs: number;
  /** A credential expiring within this window is reported. */
  expiringSoonMs: number;
  /** host:port of /metrics, /healthz, /readyz. */
  metricsBindAddress: string;
  leaderElection: {
    enabled: boolean;
    namespace: string;
    name: string;
    leaseDurationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
  };
  statusConfigMap: { namespace: string; name: string };
  /** Identity of this replica (the Lease holder). */
  identity: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

/**
 * "90s", "30m", "1h30m", "7d", "1500ms" (the project's one grammar, Go's with days), or a
 * bare number of seconds: the controller's environment variables took plain seconds
 * before they took durations, and a Helm value that worked must keep working.
 */
export function parseDuration(text: string): number {
  try {
    return parseGoDuration(text, { bareNumbers: 'seconds' });
  } catch (err) {
    if (err instanceof DurationError) throw new ConfigError(`${text}: ${err.message}`);
    throw err;
  }
}

export class ConfigError extends Error {
  override readonly name: string = 'ConfigError';
}

/** --help: the usage, printed on stdout with exit status 0. */
export class HelpRequested extends ConfigError {
  override readonly name = 'HelpRequested';
}

const OPTIONS = {
  kubeconfig: { type: 'string' },
  namespace: { type: 'string', multiple: true },
  'credential-namespace': { type: 'string' },
  'hook-name': { type: 'string' },
  'gate-deadline': { type: 'string' },
  'probe-interval': { type: 'string' },
  'expiring-soon': { type: 'string' },
  'metrics-bind-address': { type: 'string' },
  'leader-elect': { type: 'string' },
  'leader-election-namespace': { type: 'string' },
  'leader-election-id': { type: 'string' },
  'status-configmap': { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean' },
} as const;

export const USAGE = `harvester-machine-controller [flags]
  --kubeconfig PATH              Rancher local cluster kubeconfig (env RANCHER_KUBECONFIG; default: in-cluster)
  --namespace NS                 namespace of provisioning clusters, repeatable or comma-separated; "*" = all
                                 (env WATCH_NAMESPACES; default fleet-default)
  --credential-namespace NS      cloud credentials (env CREDENTIAL_NAMESPACE; default cattle-global-data)
  --hook-name NAME               pre-terminate hook name (env HOOK_NAME; default ${DEFAULT_HOOK_NAME})
  --gate-deadline DURATION       release a failing gate this long after deletion (env GATE_DEADLINE; default 30m)
  --probe-interval DURATION      probe each credential through Harvester (env PROBE_INTERVAL; default 10m)
  --expiring-soon DURATION       report credentials expiring within (env EXPIRING_SOON; default 7d)
  --metrics-bind-address ADDR    /metrics /healthz /readyz (env METRICS_BIND_ADDRESS; default 127.0.0.1:8080)
  --leader-elect true|false      (env LEADER_ELECT; default true)
  --leader-election-namespace NS (env POD_NAMESPACE; default cattle-system)
  --leader-election-id NAME      Lease name (default harvester-machine-controller)
  --status-configmap NAME        status summary ConfigMap in the leader-election namespace (default harvester-machine-controller-status)
  --log-level LEVEL              debug|info|warn|error (env LOG_LEVEL; default info)`;

export function parseConfig(
  argv: string[],
  env: Record<string, string | undefined>,
  hostname = 'controller',
): ControllerConfig {
  let values;
  try {
    values = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new ConfigError(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  }
  if (values.help) throw new HelpRequested(USAGE);
  const pick = (flag: string | undefined, envName: string, fallback: string): string =>
    flag ?? env[envName] ?? fallback;
  const nsText = values.namespace?.join(',') ?? env.WATCH_NAMESPACES ?? 'fleet-default';
  const namespaces = nsText
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const logLevel = pick(values['log-level'], 'LOG_LEVEL', 'info');
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel))
    throw new ConfigError(`--log-level: "${logLevel}" is not debug, info, warn or error`);
  const leaderElect = pick(values['leader-elect'], 'LEADER_ELECT', 'true');
  if (!['true', 'false'].includes(leaderElect))
    throw new ConfigError(`--leader-elect: "${leaderElect}" is not true or false`);
  const systemNamespace = pick(values['leader-election-namespace'], 'POD_NAMESPACE', 'cattle-system');
  const hookName = pick(values['hook-name'], 'HOOK_NAME', DEFAULT_HOOK_NAME);
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(hookName) || hookName.length > 63) {
    throw new ConfigError(
      `--hook-name: "${hookName}" is not a valid annotation name part (lower-case alphanumerics, '-', '.')`,
    );
  }
  const duration = (flag: string | undefined, envName: string, fallback: string, name: string): number => {
    try {
      return parseDuration(pick(flag, envName, fallback));
    } catch (err) {
      throw new ConfigError(`--${name} ${(err as Error).message}`);
    }
  };
  return {
    kubeconfigPath: values.kubeconfig ?? env.RANCHER_KUBECONFIG ?? undefined,
    namespaces: namespaces.includes('*') ? [] : namespaces,
    credentialNamespace: pick(
      values['credential-namespace'],
      'CREDENTIAL_NAMESPACE',
      CLOUD_CREDENTIAL_NAMESPACE,
    ),
    hookName,
    gateDeadlineMs: duration(values['gate-deadline'], 'GATE_DEADLINE', '30m', 'gate-deadline'),
    probeIntervalMs: duration(values['probe-interval'], 'PROBE_INTERVAL', '10m', 'probe-interval'),
    expiringSoonMs: duration(values['expiring-soon'], 'EXPIRING_SOON', '7d', 'expiring-soon'),
    metricsBindAddress: pick(values['metrics-bind-address'], 'METRICS_BIND_ADDRESS', '127.0.0.1:8080'),
    leaderElection: {
      enabled: leaderElect === 'true',
      namespace: systemNamespace,
      name: values['leader-election-id'] ?? 'harvester-machine-controller',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    },
    statusConfigMap: {
      namespace: systemNamespace,
      name: values['status-configmap'] ?? 'harvester-machine-controller-status',
    },
    identity: env.POD_NAME ?? `${hostname}-${process.pid}`,
    logLevel: logLevel as ControllerConfig['logLevel'],
  };
}

/**
 * A kubeconfig for the pod's service account. The token goes through client-node's
 * tokenFile auth provider, which re-reads the file: projected tokens rotate hourly.
 */
export function inClusterKubeconfig(
  env: Record<string, string | undefined>,
  dir = '/var/run/secrets/kubernetes.io/serviceaccount',
): string {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host)
    throw new ConfigError(
      'not in a cluster (KUBERNETES_SERVICE_HOST is unset): pass --kubeconfig or RANCHER_KUBECONFIG',
    );
  const server = host.includes(':') ? `https://[${host}]:${port}` : `https://${host}:${port}`;
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: in-cluster`,
    `  cluster: {server: "${server}", certificate-authority: "${dir}/ca.crt"}`,
    'users:',
    `- name: service-account`,
    `  user: {auth-provider: {name: tokenFile, config: {tokenFile: "${dir}/token"}}}`,
    'contexts:',
    `- name: in-cluster`,
    `  context: {cluster: in-cluster, user: service-account}`,
    'current-context: in-cluster',
    '',
  ].join('\n');
}
