// The plugin process: what rancher/machine's plugin.RegisterDriver does for a Go
// driver. Check the launch token, serve RPCServerDriver on 127.0.0.1, print the
// address as the first stdout line, then live until Close (exit 0) or until no
// request has arrived for 10 s (exit 1, the parent is gone).
import type { MachineDriver } from '../driver/machine-driver.js';
import { createLogger } from '../log/logger.js';
import type { Logger } from '../log/logger.js';
import { redact } from '../log/redact.js';
import { driverRegistry } from './driver-types.js';
import { API_VERSION, driverServices } from './driver-service.js';
import { PluginLogSink } from './plugin-log.js';
import type { LineWriter } from './plugin-log.js';
import { RpcServer } from './rpc-server.js';

export const PLUGIN_TOKEN_ENV = 'MACHINE_PLUGIN_TOKEN';
export const PLUGIN_TOKEN = '42';
export const HEARTBEAT_TIMEOUT_MS = 10_000;

/** RegisterDriver's message when the binary is run by hand (exact text, exit 1). */
export const NOT_A_PLUGIN_MESSAGE =
  'This is a Docker Machine plugin binary.\n' +
  'Plugin binaries are not intended to be invoked directly.\n' +
  "Please use this plugin through the main 'docker-machine' binary.\n" +
  `(API version: ${API_VERSION})\n`;

export interface DriverFactoryContext {
  readonly logger: Logger;
  /** [plugin path, parent argv0, parent args...]: drivers re-read flags from it. */
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
}

export type DriverFactory = (context: DriverFactoryContext) => MachineDriver | Promise<MachineDriver>;

export interface PluginOptions {
  readonly argv?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly stdout?: LineWriter;
  readonly stderr?: LineWriter;
  readonly exit?: (code: number) => void;
  /** The parent's silence after which we exit 1 (10 s, as in Go; tests shorten it). */
  readonly heartbeatTimeoutMs?: number;
  /** Log and exit 1 on an uncaught exception or unhandled rejection (default true). */
  readonly handleProcessErrors?: boolean;
}

export interface RunningPlugin {
  readonly address: string;
  /** Stops serving without exiting (in-process tests). */
  stop(): Promise<void>;
}

/** Runs the plugin; resolves once it serves (undefined if it exited at start-up). */
export async function runPlugin(
  factory: DriverFactory,
  options: PluginOptions = {},
): Promise<RunningPlugin | undefined> {
  const env = options.env ?? process.env;
  const argv = options.argv ?? process.argv.slice(1);
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const exit = options.exit ?? ((code: number) => process.exit(code));

  if (env[PLUGIN_TOKEN_ENV] !== PLUGIN_TOKEN) {
    stderr.write(NOT_A_PLUGIN_MESSAGE);
    exit(1);
    return undefined;
  }
  // As RegisterDriver does: the driver's own debug logging is on in a plugin.
  env.MACHINE_DEBUG = '1';
  const sink = new PluginLogSink(stdout, stderr);
  const logger = createLogger({ level: 'debug', format: 'plain', sink });

  let finished = false;
  let watchdog: NodeJS.Timeout | undefined;
  // Replaced once the server exists; a crash before that has nothing to close.
  let closeServer = (): Promise<void> => Promise.resolve();
  const finish = (code: number, why: string, level: 'info' | 'debug' = 'debug'): void => {
    if (finished) return;
    finished = true;
    clearTimeout(watchdog);
    logger[level](why);
    exit(code);
    void closeServer();
  };
  if (options.handleProcessErrors ?? true) {
    const crash = (e: unknown): void => {
      logger.error(`Plugin crashed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      finish(1, 'Exiting after a crash');
    };
    process.on('uncaughtException', crash);
    process.on('unhandledRejection', crash);
  }

  let driver: MachineDriver;
  try {
    driver = await factory({ logger, argv, env });
  } catch (e) {
    stderr.write(redact(`Error loading driver: ${e instanceof Error ? e.message : String(e)}`) + '\n');
    exit(1);
    return undefined;
  }

  const timeoutMs = options.heartbeatTimeoutMs ?? HEARTBEAT_TIMEOUT_MS;
  const armWatchdog = (): void => {
    clearTimeout(watchdog);
    if (finished) return;
    watchdog = setTimeout(
      () => finish(1, `No request from rancher-machine for ${timeoutMs} ms; exiting`),
      timeoutMs,
    );
  };
  const server = new RpcServer({
    services: driverServices(driver, {
      logger,
      // rancher-machine shows it as `(machine) Closing plugin on server side`, as for the Go plugin.
      onClose: () => finish(0, 'Closing plugin on server side', 'info'),
    }),
    registry: driverRegistry(),
    logger,
    // Go's loop restarts its timer on Heartbeat only; any request shows the parent is alive.
    onRequest: armWatchdog,
  });
  let address: string;
  try {
    address = await server.listen('127.0.0.1', 0);
  } catch (e) {
    stderr.write(`Error loading RPC server: ${e instanceof Error ? e.message : String(e)}\n`);
    exit(1);
    return undefined;
  }
  closeServer = () => server.close();
  sink.startStdout(address);
  // The timer runs from now, before any connection, as in Go.
  armWatchdog();
  return {
    address,
    stop: async () => {
      finished = true;
      clearTimeout(watchdog);
      await server.close();
    },
  };
}
