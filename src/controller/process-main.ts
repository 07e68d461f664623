// harvester-machine-controller as a process: reads its configuration (config.ts) from the
// arguments it is given, talks to Rancher's local cluster with a kubeconfig or the pod's
// service account, serves /metrics /healthz /readyz, and runs the cleanup controller while it
// holds the Lease. Started by controller/main.ts under Node, or by the single executable.
import os from 'node:os';
import { KubeClient, setUserAgentProgram, type LeadershipCallbacks } from '../kube/index.js';
import { createLogger, type Logger } from '../log/logger.js';
import { HelpRequested, parseConfig, type ControllerConfig } from './process/config.js';
import { rancherKubeconfig } from './process/rancher-kubeconfig.js';
import { CleanupController } from './controller.js';
import { probeServer } from './process/probe-server.js';
import { LeaderElector } from './process/leader-election.js';
import { controllerMetrics, countRequests } from './common/metrics.js';
import { REMOVE_HOOKS_COMMAND, removeHooksCommand } from './remove-hooks/remove-hooks-command.js';

export interface Running {
  /** The metrics/health port (useful with port 0). */
  port: number;
  shutdown: () => Promise<void>;
}

export interface RunHooks {
  /**
   * Ends the process after leadership was lost or when the controller cannot start (default
   * process.exit): the Deployment restarts it clean, and whatever it still had in flight dies
   * with it. Tests record it.
   */
  exit?: (code: number) => void;
}

/** Exit status: leadership lost, or the controller could not start (e.g. a list its RBAC denies). */
export const EXIT_FAILED = 1;
/** A shutdown after a failed start gets this long before the process exits anyway. */
const FAILED_START_SHUTDOWN_MS = 5_000;

export async function run(
  config: ControllerConfig,
  logger: Logger,
  env: Record<string, string | undefined>,
  hooks: RunHooks = {},
): Promise<Running> {
  const loaded = rancherKubeconfig(config, env);
  const metrics = controllerMetrics({ processMetrics: true });
  // Rancher's own apiserver, on the controller's network: no compression (TransportOptions).
  const client = KubeClient.fromLoaded(loaded, {
    onRequest: countRequests(metrics, 'rancher'),
    compression: false,
  });
  const exit = hooks.exit ?? ((code: number) => process.exit(code));
  const lease = { name: config.leaderElection.name };
  metrics.leaderElection.set(lease, 0);
  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => (stopping ??= controller.stop().then(() => client.close()));
  const controller = new CleanupController({
    client,
    config,
    logger,
    metrics,
    // Its own client (leader-election.ts): Lease renewals never wait behind the controller's requests.
    ...(config.leaderElection.enabled
      ? {
          leaderElection: ({ started, stopped }: LeadershipCallbacks) =>
            LeaderElector.forKubeconfig(loaded, {
              ...config.leaderElection,
              identity: config.identity,
              logger,
              onStartedLeading: started,
              onStoppedLeading: stopped,
            }),
        }
      : {}),
    onLeadershipChange: (leading) => {
      metrics.leader.set({}, leading ? 1 : 0);
      metrics.leaderElection.set(lease, leading ? 1 : 0);
    },
    // Another replica may take over once the lease duration is up: the manager stopped acting
    // (halt); exit now, as a clean shutdown could wait on requests that no longer get answers.
    onLeadershipLost: () => {
      logger.error('leadership lost; exiting');
      exit(EXIT_FAILED);
    },
    onStartFailed: (err) => {
      logger.error('controller failed to start; exiting', {
        error: err instanceof Error ? err.message : String(err),
      });
      // Exit, not just stop: the informers that did start keep their watches and timers
      // alive, and a kubelet restarts only a process that ends. A shutdown that hangs on the
      // apiserver does not hold the exit for longer than FAILED_START_SHUTDOWN_MS.
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, FAILED_START_SHUTDOWN_MS)));
      void Promise.race([shutdown().catch(() => undefined), bound]).then(() => {
        clearTimeout(timer);
        exit(EXIT_FAILED);
      });
    },
  });
  const { manager } = controller;
  const server = manager.add(
    probeServer(
      config.metricsBindAddress,
      {
        healthy: () => true,
        ready: () => manager.ready,
        metrics: () => metrics.registry.metrics(),
        metricsContentType: metrics.registry.contentType,
      },
      logger,
    ),
  );
  await manager.run();
  return { port: server.port, shutdown };
}

/** `controller remove-hooks [flags]`: runs instead of the controller and exits (remove-hooks-command.ts). */
async function runSubcommand(argv: string[]): Promise<boolean> {
  if (argv[0] !== REMOVE_HOOKS_COMMAND) return false;
  process.exit(await removeHooksCommand(argv.slice(1), process.env));
}

/** The controller's command line (`argv`: what follows the program name, or `controller`). */
export async function runControllerProcess(argv: string[]): Promise<void> {
  setUserAgentProgram('harvester-machine-controller');
  if (await runSubcommand(argv)) return;
  let config: ControllerConfig;
  try {
    config = parseConfig(argv, process.env, os.hostname());
  } catch (err) {
    if (err instanceof HelpRequested) {
      process.stdout.write(`${err.message}\n`);
      process.exit(0);
    }
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  }
  const logger = createLogger({
    format: 'json',
    level: config.logLevel,
    fields: { component: 'harvester-machine-controller' },
  });
  const { shutdown } = await run(config, logger, process.env);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      logger.info('shutting down', { signal });
      void shutdown().then(() => process.exit());
    });
  }
}
