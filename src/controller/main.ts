// Entry point: harvester-machine-controller. Reads its configuration (config.ts), talks to
// Rancher's local cluster with a kubeconfig or the pod's service account, serves
// /metrics /healthz /readyz, and runs the cleanup controller while it holds the Lease.
import fs from 'node:fs';
import os from 'node:os';
import { KubeClient } from '../kube/index.js';
import { createLogger, type Logger } from '../log/logger.js';
import { ConfigError, HelpRequested, parseConfig, type ControllerConfig } from './config.js';
import { rancherKubeconfig } from './rancher-kubeconfig.js';
import { CleanupController } from './controller.js';
import { startHttpServer } from './http-server.js';
import { LeaderElector } from './leader-election.js';
import { controllerMetrics } from './metrics.js';
import { REMOVE_HOOKS_COMMAND, removeHooksCommand } from './remove-hooks-command.js';

export interface Running {
  /** The metrics/health port (useful with port 0). */
  port: number;
  shutdown: () => Promise<void>;
}

export async function run(
  config: ControllerConfig,
  logger: Logger,
  env: Record<string, string | undefined>,
): Promise<Running> {
  const client = KubeClient.fromLoaded(rancherKubeconfig(config, env));
  const metrics = controllerMetrics();
  let controller: CleanupController | undefined;
  let leading = false;
  let exiting = false;

  const startLeading = (): void => {
    leading = true;
    metrics.leader.set({}, 1);
    controller = new CleanupController({ client, config, logger, metrics });
    controller.start().catch((err: unknown) => {
      logger.error('controller failed to start', { error: err instanceof Error ? err.message : String(err) });
      process.exitCode = 1;
      void shutdown();
    });
  };
  const elector = config.leaderElection.enabled
    ? new LeaderElector(client, {
        ...config.leaderElection,
        identity: config.identity,
        logger,
        onStartedLeading: startLeading,
        onStoppedLeading: () => {
          metrics.leader.set({}, 0);
          // Another replica may already act: stop at once and let the Deployment restart us.
          if (!exiting) {
            logger.error('leadership lost; exiting');
            process.exitCode = 1;
            void shutdown();
          }
        },
      })
    : undefined;

  const server = await startHttpServer(config.metricsBindAddress, {
    healthy: () => true,
    ready: () => (leading ? (controller?.ready ?? false) : true),
    metrics: () => metrics.registry.render(),
  });
  logger.info('serving /metrics /healthz /readyz', { address: config.metricsBindAddress });

  if (elector) elector.start();
  else startLeading();

  const shutdown = async (): Promise<void> => {
    if (exiting) return;
    exiting = true;
    await controller?.stop();
    await elector?.stop();
    await server.close();
    client.close();
  };
  return { port: server.port, shutdown };
}

/** `controller remove-hooks [flags]`: runs instead of the controller and exits (remove-hooks-command.ts). */
async function runSubcommand(argv: string[]): Promise<boolean> {
  if (argv[0] !== REMOVE_HOOKS_COMMAND) return false;
  process.exit(await removeHooksCommand(argv.slice(1), process.env));
}

export async function main(): Promise<void> {
  if (await runSubcommand(process.argv.slice(2))) return;
  let config: ControllerConfig;
  try {
    config = parseConfig(process.argv.slice(2), process.env, os.hostname());
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

if (process.argv[1] && import.meta.url === new URL(`file://${fs.realpathSync(process.argv[1])}`).href) {
  main().catch((err: unknown) => {
    process.stderr.write(
      `harvester-machine-controller: ${err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exit(1);
  });
}
