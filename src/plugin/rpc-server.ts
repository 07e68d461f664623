// Go's net/rpc server over HTTP CONNECT (rpc.HandleHTTP + http.Serve), on a plain
// net.Server: rancher-machine's rpc.DialHTTP cannot tell it from a Go plugin.
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import type { InterfaceRegistry } from './gob/interface-registry.js';
import type { GobLimits } from './gob/limits.js';
import { RpcConnection } from './rpc-connection.js';
import type { RpcServices } from './rpc-service.js';
import { silentLogger } from '../log/logger.js';
import type { Logger } from '../log/logger.js';

export interface RpcServerOptions {
  readonly services: RpcServices;
  /** Names of the concrete types that may travel in interface values. */
  readonly registry: InterfaceRegistry;
  readonly logger?: Logger;
  readonly limits?: Partial<GobLimits>;
  /** Called for every request header read, before the call runs. */
  readonly onRequest?: (serviceMethod: string) => void;
  /** Calls running at once per connection before reading pauses (default 64). */
  readonly maxInFlight?: number;
  /** Time allowed for the CONNECT request (default 10 s, as long as the parent waits for us). */
  readonly handshakeTimeoutMs?: number;
  /** Connections served at once (default 16; rancher-machine opens one). */
  readonly maxConnections?: number;
}

export class RpcServer {
  private readonly server: Server;
  private readonly connections = new Set<RpcConnection>();
  private readonly logger: Logger;

  constructor(private readonly options: RpcServerOptions) {
    this.logger = options.logger ?? silentLogger;
    // Half-open: a client that shuts down its side still gets the answers of its calls.
    this.server = createServer({ allowHalfOpen: true, pauseOnConnect: false }, (socket) => {
      const connection = new RpcConnection(
        socket,
        {
          services: options.services,
          registry: options.registry,
          logger: this.logger,
          limits: options.limits,
          onRequest: options.onRequest,
          maxInFlight: options.maxInFlight ?? 64,
          handshakeTimeoutMs: options.handshakeTimeoutMs ?? 10_000,
        },
        (closed) => this.connections.delete(closed),
      );
      this.connections.add(connection);
    });
    this.server.maxConnections = options.maxConnections ?? 16;
    this.server.on('error', (err) => this.logger.error(`rpc: server error: ${err.message}`));
  }

  /** Listens and resolves to "host:port", the line rancher-machine reads. */
  listen(host = '127.0.0.1', port = 0): Promise<string> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve(this.address());
      });
    });
  }

  address(): string {
    const address = this.server.address() as AddressInfo | null;
    if (address === null) throw new Error('rpc server is not listening');
    return address.family === 'IPv6'
      ? `[${address.address}]:${address.port}`
      : `${address.address}:${address.port}`;
  }

  /** Stops listening and drops every connection. */
  close(): Promise<void> {
    for (const connection of this.connections) connection.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
