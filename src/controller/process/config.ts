// The controller's configuration: flags first, then environment variables (Helm sets
// those), then defaults. Parsing is pure; main.ts reads files and the environment.
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../../common/config-error.js';
import { DurationError, parseDuration as parseGoDuration } from '../../common/durations.js';
import { CLOUD_CREDENTIAL_NAMESPACE } from '../../rancher/cloud-credential.js';
import { DEFAULT_HOOK_NAME } from '../constants.js';
import { DEFAULT_GUEST_MAX_VOLUMES } from '../constants.js';
import { labelSelectorProblem, secretFieldSelectorProblem } from './selectors.js';
/** When the controller reads guest clusters' volumes: always (a watch), only at a cluster's deletion, or never. */
export type GuestVolumesMode = 'watch' | 'at-deletion' | 'off';

const GUEST_VOLUMES_MODES: readonly GuestVolumesMode[] = ['watch', 'at-deletion', 'off'];

export interface ControllerConfig {
  /**
   * Path of the Rancher local cluster's kubeconfig; undefined = client-go's rules without an
   * explicit file: the pod's service account, else $KUBECONFIG or ~/.kube/config.
   */
  kubeconfigPath: string | undefined;
  /** --context: a context of that kubeconfig other than its current-context. */
  kubeContext: string | undefined;
  /** Namespaces holding the provisioning clusters and machines; [] = all namespaces. */
  namespaces: string[];
  credentialNamespace: string;
  /**
   * Narrow the credential watch to what the controller may read:
   * only Secrets that match are ever sent to the controller.
   */
  credentialLabelSelector?: string | undefined;
  credentialFieldSelector?: string | undefined;
  hookName: string;
  /** After a Machine's deletion, how long a failing cleanup may hold its gate. */
  gateDeadlineMs: number;
  /** How often each credential is probed through Harvester. */
  probeIntervalMs: number;
  /** A credential expiring within this window is reported. */
  expiringSoonMs: number;
  /**
   * How guest clusters' host volumes are recorded:
   * watch each guest's PVs while it lives and take a last inventory at deletion, only the last
   * inventory, or not at all (then only what was labelled otherwise goes with a deleted cluster).
   */
  guestVolumes: GuestVolumesMode;
  /**
   * A guest cluster's budget: the most PersistentVolumes
   * of the Harvester CSI driver kept per guest; past it the guest is over budget and its
   * ownership is not recorded.
   */
  guestMaxVolumes: number;
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

/** A flag or variable the controller cannot use (the one ConfigError of src/common). */
export { ConfigError };

/** --help: the usage, printed on stdout with exit status 0. */
export class HelpRequested extends ConfigError {
  override readonly name = 'HelpRequested';
}

/** The flag values as commander hands them over: absent flags are undefined. */
interface FlagValues {
  kubeconfig?: string;
  context?: string;
  namespace?: string[];
  credentialNamespace?: string;
  credentialLabelSelector?: string;
  credentialFieldSelector?: string;
  hookName?: string;
  gateDeadline?: string;
  probeInterval?: string;
  expiringSoon?: string;
  guestVolumes?: string;
  guestMaxVolumes?: string;
  metricsBindAddress?: string;
  leaderElect?: string;
  leaderElectionNamespace?: string;
  leaderElectionId?: string;
  statusConfigmap?: string;
  logLevel?: string;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * The flags, with the same parser as the CLI's (commander). Defaults are not given to
 * commander: a flag wins over its environment variable only when it is on the command line.
 */
function controllerCommand(output: { text: string }): Command {
  return new Command('harvester-machine controller')
    .description(
      "Rancher-side cleanup controller: a Cluster API pre-terminate hook on every Harvester-backed Machine, released once the machine's VM is annotated to remove its volumes.",
    )
    .option(
      '--kubeconfig <path>',
      'Rancher local cluster kubeconfig (env RANCHER_KUBECONFIG; default: in-cluster, else $KUBECONFIG, ~/.kube/config)',
    )
    .option('--context <name>', "the kubeconfig's context to use (default: its current-context)")
    .option(
      '--namespace <ns>',
      'namespace of provisioning clusters, repeatable or comma-separated; "*" = all (env WATCH_NAMESPACES; default fleet-default)',
      collect,
    )
    .option(
      '--credential-namespace <ns>',
      `cloud credentials (env CREDENTIAL_NAMESPACE; default ${CLOUD_CREDENTIAL_NAMESPACE})`,
    )
    .option(
      '--credential-label-selector <selector>',
      'watch only the credential Secrets with these labels, e.g. harvester-machine.io/credential=true (env CREDENTIAL_LABEL_SELECTOR; default all)',
    )
    .option(
      '--credential-field-selector <selector>',
      'watch only the credential Secrets matching this field selector, e.g. type=provisioning.cattle.io/cloud-credential (env CREDENTIAL_FIELD_SELECTOR; default all)',
    )
    .option('--hook-name <name>', `pre-terminate hook name (env HOOK_NAME; default ${DEFAULT_HOOK_NAME})`)
    .option(
      '--gate-deadline <duration>',
      'release a failing gate this long after deletion (env GATE_DEADLINE; default 30m)',
    )
    .option(
      '--probe-interval <duration>',
      'probe each credential through Harvester (env PROBE_INTERVAL; default 10m)',
    )
    .option(
      '--expiring-soon <duration>',
      'report credentials expiring within (env EXPIRING_SOON; default 7d)',
    )
    .option(
      '--guest-volumes <mode>',
      "record which host volumes are each guest cluster's, from its own PersistentVolumes: watch (while it lives, and a last inventory at its deletion), at-deletion (the last inventory only), off (env GUEST_VOLUMES; default watch)",
    )
    .option(
      '--guest-max-volumes <n>',
      `the most PersistentVolumes of the Harvester CSI driver kept per guest cluster; past it the guest is over budget and its volumes are not recorded (env GUEST_MAX_VOLUMES; default ${DEFAULT_GUEST_MAX_VOLUMES})`,
    )
    .option(
      '--metrics-bind-address <addr>',
      '/metrics /healthz /readyz (env METRICS_BIND_ADDRESS; default 127.0.0.1:8080)',
    )
    .option('--leader-elect <true|false>', '(env LEADER_ELECT; default true)')
    .option('--leader-election-namespace <ns>', '(env POD_NAMESPACE; default cattle-system)')
    .option('--leader-election-id <name>', 'Lease name (default harvester-machine-controller)')
    .option(
      '--status-configmap <name>',
      'status summary ConfigMap in the leader-election namespace (default harvester-machine-controller-status)',
    )
    .option('--log-level <level>', 'debug|info|warn|error (env LOG_LEVEL; default info)')
    .addHelpText(
      'after',
      '\nDurations are Go durations (90s, 10m, 1h30m) or days (7d); a bare number is seconds.\n' +
        'Exit status: 0 after SIGTERM or SIGINT; 1 when it cannot start (e.g. a list its RBAC denies) or loses\n' +
        'its Lease (the Deployment restarts it); 2 on bad flags.',
    )
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => (output.text += text),
      writeErr: (text) => (output.text += text),
    });
}

/** The usage, as --help prints it. */
export const USAGE = controllerCommand({ text: '' }).helpInformation().trimEnd();

function parseFlags(argv: string[]): FlagValues {
  const output = { text: '' };
  const command = controllerCommand(output);
  try {
    command.parse(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError && err.code === 'commander.helpDisplayed')
      throw new HelpRequested(output.text.trimEnd());
    const message = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`${message}\n${USAGE}`);
  }
  return command.opts<FlagValues>();
}

/** Above this a guest's cache alone could take a sizeable share of the chart's heap. */
const MAX_GUEST_MAX_VOLUMES = 50_000;

export function parseConfig(
  argv: string[],
  env: Record<string, string | undefined>,
  hostname = 'controller',
): ControllerConfig {
  const values = parseFlags(argv);
  const pick = (flag: string | undefined, envName: string, fallback: string): string =>
    flag ?? env[envName] ?? fallback;
  const nsText = values.namespace?.join(',') ?? env.WATCH_NAMESPACES ?? 'fleet-default';
  const namespaces = nsText
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const logLevel = pick(values.logLevel, 'LOG_LEVEL', 'info');
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel))
    throw new ConfigError(`--log-level: "${logLevel}" is not debug, info, warn or error`);
  const leaderElect = pick(values.leaderElect, 'LEADER_ELECT', 'true');
  if (!['true', 'false'].includes(leaderElect))
    throw new ConfigError(`--leader-elect: "${leaderElect}" is not true or false`);
  const systemNamespace = pick(values.leaderElectionNamespace, 'POD_NAMESPACE', 'cattle-system');
  const guestVolumes = pick(values.guestVolumes, 'GUEST_VOLUMES', 'watch');
  if (!(GUEST_VOLUMES_MODES as readonly string[]).includes(guestVolumes))
    throw new ConfigError(`--guest-volumes: "${guestVolumes}" is not ${GUEST_VOLUMES_MODES.join(', ')}`);
  const guestMaxText = pick(values.guestMaxVolumes, 'GUEST_MAX_VOLUMES', String(DEFAULT_GUEST_MAX_VOLUMES));
  const guestMaxVolumes = /^\d{1,7}$/.test(guestMaxText) ? Number(guestMaxText) : NaN;
  if (!(guestMaxVolumes >= 1 && guestMaxVolumes <= MAX_GUEST_MAX_VOLUMES))
    throw new ConfigError(
      `--guest-max-volumes: "${guestMaxText}" is not a whole number from 1 to ${MAX_GUEST_MAX_VOLUMES}`,
    );
  const hookName = pick(values.hookName, 'HOOK_NAME', DEFAULT_HOOK_NAME);
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(hookName) || hookName.length > 63) {
    throw new ConfigError(
      `--hook-name: "${hookName}" is not a valid annotation name part (lower-case alphanumerics, '-', '.')`,
    );
  }
  const selector = (
    flag: string | undefined,
    envName: string,
    name: string,
    problemOf: (s: string) => string | undefined,
  ): string | undefined => {
    const value = (flag ?? env[envName])?.trim();
    if (!value) return undefined;
    const problem = problemOf(value);
    if (problem) throw new ConfigError(`--${name}: "${value}" ${problem}`);
    return value;
  };
  const duration = (flag: string | undefined, envName: string, fallback: string, name: string): number => {
    try {
      return parseDuration(pick(flag, envName, fallback));
    } catch (err) {
      throw new ConfigError(`--${name} ${(err as Error).message}`);
    }
  };
  return {
    kubeconfigPath: values.kubeconfig ?? env.RANCHER_KUBECONFIG ?? undefined,
    kubeContext: values.context,
    namespaces: namespaces.includes('*') ? [] : namespaces,
    credentialNamespace: pick(values.credentialNamespace, 'CREDENTIAL_NAMESPACE', CLOUD_CREDENTIAL_NAMESPACE),
    credentialLabelSelector: selector(
      values.credentialLabelSelector,
      'CREDENTIAL_LABEL_SELECTOR',
      'credential-label-selector',
      labelSelectorProblem,
    ),
    credentialFieldSelector: selector(
      values.credentialFieldSelector,
      'CREDENTIAL_FIELD_SELECTOR',
      'credential-field-selector',
      secretFieldSelectorProblem,
    ),
    hookName,
    gateDeadlineMs: duration(values.gateDeadline, 'GATE_DEADLINE', '30m', 'gate-deadline'),
    probeIntervalMs: duration(values.probeInterval, 'PROBE_INTERVAL', '10m', 'probe-interval'),
    expiringSoonMs: duration(values.expiringSoon, 'EXPIRING_SOON', '7d', 'expiring-soon'),
    guestVolumes: guestVolumes as GuestVolumesMode,
    guestMaxVolumes,
    metricsBindAddress: pick(values.metricsBindAddress, 'METRICS_BIND_ADDRESS', '127.0.0.1:8080'),
    leaderElection: {
      enabled: leaderElect === 'true',
      namespace: systemNamespace,
      name: values.leaderElectionId ?? 'harvester-machine-controller',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    },
    statusConfigMap: {
      namespace: systemNamespace,
      name: values.statusConfigmap ?? 'harvester-machine-controller-status',
    },
    identity: env.POD_NAME ?? `${hostname}-${process.pid}`,
    logLevel: logLevel as ControllerConfig['logLevel'],
  };
}
