// A TCP relay on 127.0.0.1 that counts the bytes each way: put in front of the sandbox's
// front proxy, it measures what a client reads and sends on the wire (TLS records, headers
// and bodies; compressed bodies as compressed), which is what a job pays through Rancher's
// proxy. A kubeconfig is pointed at it by rewriting its server's port: the proxy's serving
// certificate names 127.0.0.1, so TLS verifies as before.
import net from 'node:net';

export interface ByteCounter {
  /** 127.0.0.1:<port> */
  readonly port: number;
  /** Bytes from the server to clients (what clients read) since the last reset. */
  readonly read: number;
  /** Bytes from clients to the server. */
  readonly sent: number;
  /** Connections opened since the last reset. */
  readonly connections: number;
  reset(): void;
  /** A kubeconfig whose server is this relay instead of `target`. */
  kubeconfigThrough(kubeconfig: string): string;
  stop(): Promise<void>;
}

export async function startByteCounter(target: { host: string; port: number }): Promise<ByteCounter> {
  let read = 0;
  let sent = 0;
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    connections++;
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.on('data', (b: Buffer) => (read += b.length));
    client.on('data', (b: Buffer) => (sent += b.length));
    upstream.pipe(client);
    client.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    get read() {
      return read;
    },
    get sent() {
      return sent;
    },
    get connections() {
      return connections;
    },
    reset() {
      read = 0;
      sent = 0;
      connections = 0;
    },
    kubeconfigThrough(kubeconfig) {
      const from = `https://${target.host}:${target.port}`;
      if (!kubeconfig.includes(from)) throw new Error(`the kubeconfig's server is not ${from}`);
      return kubeconfig.split(from).join(`https://127.0.0.1:${port}`);
    },
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
