// harvester-machine-controller as a process: reads its configuration (config.ts) from the
// arguments it is given, talks to Rancher's local cluster with a kubeconfig or the pod's
// service account, serves /metrics /healthz /readyz, and runs the cleanup controller while it
// holds the Lease. Started by controller/main.ts under Node, or by the single executable.
import os from 'node:os';
import { KubeClient, setUserAgentProgram, type LeadershipCallbacks, type Manager } from '../kube/index.js';
import type { LoadedKubeconfig } from '../kube/kubeconfig-loading.js';
import { createLogger, type Logger } from '../log/logger.js';
import { HelpRequested, parseConfig, type ControllerConfig } from './process/config.js';
import { rancherKubeconfig } from './process/rancher-kubeconfig.js';
import { CleanupController, type CleanupControllerOptions } from './controller.js';
import { probeServer } from './process/probe-server.js';
import { LeaderElector } from './process/leader-election.js';
import { controllerMetrics, countRequests, type ControllerMetrics } from './common/metrics.js';
import { exitAfter, exitPlan, type ManagerStop } from './process/exit-policy.js';
import { REMOVE_HOOKS_COMMAND, removeHooksCommand } from './remove-hooks/remove-hooks-command.js';

export interface Running {
  /** The metrics/health port (useful with port 0). */
  port: number;
  shutdown: () => Promise<void>;
}

export interface RunHooks {
  /**
   * Ends the process when the manager stops acting on its own (default process.exit;
   * process/exit-policy.ts decides the code). Tests record it.
   */
  exit?: (code: number) => void;
}

/** Builds the controller on Rancher's local cluster, serves its probes, and runs the manager. */
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
  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => (stopping ??= controller.stop().then(() => client.close()));
  const exit = hooks.exit ?? ((code: number) => process.exit(code));
  const stopped = (how: ManagerStop): void => exitAfter(exitPlan(how), { logger, shutdown, exit });
  const controller = new CleanupController({
    client,
    config,
    logger,
    metrics,
    ...leadership(config, loaded, logger, metrics),
    onLeadershipLost: () => stopped({ reason: 'leadership-lost' }),
    onStartFailed: (error) => stopped({ reason: 'start-failed', error }),
  });
  const server = controller.manager.add(probes(controller.manager, config, metrics, logger));
  await controller.manager.run();
  return { port: server.port, shutdown };
}

/** Leader election as configured (on its own client: leader-election.ts), and the leader metrics. */
function leadership(
  config: ControllerConfig,
  loaded: LoadedKubeconfig,
  logger: Logger,
  metrics: ControllerMetrics,
): Pick<CleanupControllerOptions, 'leaderElection' | 'onLeadershipChange'> {
  const lease = { name: config.leaderElection.name };
  metrics.leaderElection.set(lease, 0);
  return {
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
  };
}

/** /metrics, /healthz and /readyz, on the manager's readiness. */
function probes(manager: Manager, config: ControllerConfig, metrics: ControllerMetrics, logger: Logger) {
  return probeServer(
    config.metricsBindAddress,
    {
      healthy: () => true,
      ready: () => manager.ready,
      metrics: () => metrics.registry.metrics(),
      metricsContentType: metrics.registry.contentType,
    },
    logger,
  );
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
