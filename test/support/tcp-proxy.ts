// A loopback TCP proxy a test can freeze: while frozen, nothing is passed in either direction
// and new connections wait, as with an apiserver (or a load balancer in front of it) that
// stops answering without closing anything. TLS passes through untouched.
import net from 'node:net';

export interface FreezableProxy {
  /** The proxy's address, e.g. https://127.0.0.1:41234 for an https upstream. */
  readonly port: number;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startFreezableProxy(upstream: { host: string; port: number }): Promise<FreezableProxy> {
  let frozen = false;
  const sockets = new Set<net.Socket>();
  const waiting: Array<() => void> = [];
  const track = (s: net.Socket): net.Socket => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
    if (frozen) s.pause();
    return s;
  };
  const connect = (client: net.Socket): void => {
    const server = track(net.connect(upstream.port, upstream.host));
    for (const [from, to] of [
      [client, server],
      [server, client],
    ] as const) {
      from.on('data', (chunk) => to.write(chunk));
      from.on('end', () => to.end());
      from.on('close', () => to.destroy());
    }
  };
  const server = net.createServer((client) => {
    track(client);
    if (frozen) waiting.push(() => connect(client));
    else connect(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    freeze() {
      frozen = true;
      for (const s of sockets) s.pause();
    },
    thaw() {
      frozen = false;
      for (const s of sockets) s.resume();
      for (const w of waiting.splice(0)) w();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
