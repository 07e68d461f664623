// The `remove-hooks` command line: the controller's own flags and environment (the chart's
// pre-delete Job passes the Deployment's), plus --hold. Prints one summary line on stdout;
// exits 0 when no hook is left, 1 when removing failed, 2 on bad usage.
import os from 'node:os';
import { KubeClient } from '../../kube/index.js';
import { createLogger } from '../../log/logger.js';
import { ConfigError, HelpRequested, parseConfig, parseDuration, USAGE } from '../process/config.js';
import { EventRecorder } from '../common/events.js';
import { rancherKubeconfig } from '../process/rancher-kubeconfig.js';
import { HOLDER_PREFIX, removeHooks } from './remove-hooks.js';
import { keyText } from '../../api/object-key.js';

export const REMOVE_HOOKS_COMMAND = 'remove-hooks';
const DEFAULT_HOLD = '5m';

export const REMOVE_HOOKS_USAGE = `harvester-machine controller ${REMOVE_HOOKS_COMMAND} [flags]
Removes this installation's pre-terminate hook (--hook-name) from every Machine in the watched
namespaces, after taking the controller's Lease so that no replica adds one back. Run it before
the controller goes (the chart's pre-delete hook does): a hook left behind holds a Machine's
deletion for as long as it stays.
  --hold DURATION                keep the Lease from the replicas this long (env REMOVE_HOOKS_HOLD; default ${DEFAULT_HOLD})
and the controller's: --kubeconfig, --namespace, --hook-name, --leader-election-namespace,
--leader-election-id, --log-level (same environment variables):
${USAGE}`;

/** Splits --hold off the arguments; the rest are the controller's flags. */
function takeHold(argv: string[]): { hold: string | undefined; rest: string[] } {
  const rest: string[] = [];
  let hold: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--hold') {
      hold = argv[++i];
      if (hold === undefined) throw new ConfigError('--hold: a duration is required (examples: 90s, 5m)');
    } else if (arg.startsWith('--hold=')) hold = arg.slice('--hold='.length);
    else rest.push(arg);
  }
  return { hold, rest };
}

export async function removeHooksCommand(
  argv: string[],
  env: Record<string, string | undefined>,
  out: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream } = process,
): Promise<number> {
  let config;
  let holdMs: number;
  try {
    const { hold, rest } = takeHold(argv);
    if (rest.includes('--help') || rest.includes('-h')) throw new HelpRequested(REMOVE_HOOKS_USAGE);
    config = parseConfig(rest, env, os.hostname());
    try {
      holdMs = parseDuration(hold ?? env.REMOVE_HOOKS_HOLD ?? DEFAULT_HOLD);
    } catch (err) {
      throw new ConfigError(`--hold: ${(err as Error).message}`);
    }
  } catch (err) {
    if (err instanceof HelpRequested) {
      out.stdout.write(`${err.message}\n`);
      return 0;
    }
    out.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  const logger = createLogger({
    format: 'json',
    level: config.logLevel,
    fields: { component: 'harvester-machine-controller', command: REMOVE_HOOKS_COMMAND },
  });
  let client: KubeClient | undefined;
  try {
    client = KubeClient.fromLoaded(rancherKubeconfig(config, env));
    const identity = `${HOLDER_PREFIX}${config.identity}`;
    const result = await removeHooks({
      client,
      logger,
      events: new EventRecorder(client, logger, identity),
      namespaces: config.namespaces,
      hookName: config.hookName,
      lease: {
        namespace: config.leaderElection.namespace,
        name: config.leaderElection.name,
        identity,
        holdMs,
      },
    });
    const where = config.namespaces.length > 0 ? config.namespaces.join(', ') : 'all namespaces';
    const deleting = result.releasedWhileDeleting.length;
    out.stdout.write(
      `removed ${result.removed.length} pre-terminate hook(s) ${config.hookName} in ${where}` +
        (deleting ? ` (${deleting} from Machines being deleted, released without cleanup)` : '') +
        `; the Lease ${keyText(config.leaderElection.namespace, config.leaderElection.name)} is held for ${Math.round(holdMs / 1000)} s\n`,
    );
    return 0;
  } catch (err) {
    out.stderr.write(
      `harvester-machine controller ${REMOVE_HOOKS_COMMAND}: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    return 1;
  } finally {
    client?.close();
  }
}
