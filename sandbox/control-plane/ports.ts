import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';

/** A port free on 127.0.0.1 right now (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

const EPHEMERAL_RANGE_FILE = '/proc/sys/net/ipv4/ip_local_port_range';

/** The first port the kernel hands out as the local port of outgoing connections. */
function ephemeralStart(): number {
  try {
    const first = Number(fs.readFileSync(EPHEMERAL_RANGE_FILE, 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 1025 ? first : 32768;
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

/**
 * A free port below the kernel's ephemeral range, for a server that listens on every
 * interface and is started a while after its port is chosen (Cluster API's webhook server:
 * its URL goes into the CRDs first). A port the kernel picked would be one it also gives
 * to outgoing connections, and on a busy machine one of those (or one in TIME_WAIT) held
 * it by the time the server bound it: `bind: address already in use`.
 */
export async function freePortBelowEphemeral(): Promise<number> {
  const top = ephemeralStart() - 1;
  const bottom = Math.max(1025, top - 10_000);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = bottom + crypto.randomInt(top - bottom + 1);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${bottom} and ${top} on 127.0.0.1 after 50 tries`);
}
