// The /metrics /healthz /readyz server as a manager runnable: it serves from Manager.run() on,
// leader or standby, and closes last.
import type { Runnable } from '../../kube/index.js';
import type { Logger } from '../../log/logger.js';
import { startHttpServer, type HealthSource } from './http-server.js';

export interface ProbeServer extends Runnable {
  /** The bound port once started (useful with port 0). */
  readonly port: number;
}

export function probeServer(bind: string, source: HealthSource, logger: Logger): ProbeServer {
  let server: { port: number; close: () => Promise<void> } | undefined;
  return {
    name: 'probe-server',
    get port() {
      if (!server) throw new Error('the probe server has not started');
      return server.port;
    },
    start: async () => {
      server = await startHttpServer(bind, source);
      logger.info('serving /metrics /healthz /readyz', { address: bind });
    },
    stop: () => server?.close(),
  };
}
