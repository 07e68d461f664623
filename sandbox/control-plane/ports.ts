import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';

const EPHEMERAL_RANGE_FILE = '/proc/sys/net/ipv4/ip_local_port_range';

/** The first port the kernel hands out as the local port of outgoing connections. */
function ephemeralStart(): number {
  try {
    const first = Number(fs.readFileSync(EPHEMERAL_RANGE_FILE, 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 2048 ? first : 32768;
  } catch {
    return 32768;
  }
}

/** Whether 127.0.0.1:port can be listened on right now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Ports this process handed out already: never twice. */
const handedOut = new Set<number>();

/**
 * A port free on 127.0.0.1 now, for a server another process starts a little later (etcd,
 * kube-apiserver, Cluster API's webhook server), and that a restarted apiserver binds
 * again. Picked at random below the kernel's ephemeral range: a port the kernel chose
 * (`listen(0)`) is one it also gives to outgoing connections, and on a busy machine one
 * of those (or one in TIME_WAIT) held it by the time the server bound it (`bind: address
 * already in use`, seen in CI for kube-apiserver and Cluster API's manager).
 */
export async function freePort(): Promise<number> {
  const top = ephemeralStart() - 1;
  const bottom = 2048;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = bottom + crypto.randomInt(top - bottom + 1);
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port between ${bottom} and ${top} on 127.0.0.1 after 100 tries`);
}

/** Whether something accepts a TCP connection on 127.0.0.1:port now. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
