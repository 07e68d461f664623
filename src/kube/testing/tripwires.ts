// Tripwires for hostile-credential tests: what a kubeconfig could make us do, made observable.
// A loopback TCP server counts every connection (as the apiserver, a proxy or an OIDC issuer
// a credential names); files keep an atime from 2001 that any read moves forward (the file
// systems here are mounted relatime); commands are scripts that leave a marker file when
// run. After a refused credential, all three must show nothing.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const OLD = new Date('2001-01-01T00:00:00Z');

export interface Tripwires {
  /** http://127.0.0.1:<port>: where a request, a proxy tunnel or a token refresh would arrive. */
  url: string;
  /** Files a kubeconfig may name: token, certificate, key, CA. */
  files: { token: string; cert: string; key: string; ca: string };
  /** An executable that writes a marker when it runs. */
  command: string;
  connections(): number;
  /** Files of `files` whose atime moved (they were read). */
  readFiles(): string[];
  /** Whether any command ran. */
  ran(): boolean;
  close(): Promise<void>;
}

export async function setTripwires(): Promise<Tripwires> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-tripwires-'));
  const markers = path.join(dir, 'markers');
  fs.mkdirSync(markers);
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    // Never answers: whoever connected is seen, and waits.
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const files = {
    token: path.join(dir, 'token'),
    cert: path.join(dir, 'client.crt'),
    key: path.join(dir, 'client.key'),
    ca: path.join(dir, 'ca.crt'),
  };
  for (const file of Object.values(files)) {
    fs.writeFileSync(file, 'tripwire\n');
    fs.utimesSync(file, OLD, new Date());
  }
  const command = path.join(dir, 'exec-plugin');
  fs.writeFileSync(command, `#!/bin/sh\ntouch "${markers}/ran-$$"\n`, { mode: 0o755 });
  return {
    url: `http://127.0.0.1:${port}`,
    files,
    command,
    connections: () => connections,
    readFiles: () => Object.values(files).filter((f) => fs.statSync(f).atimeMs > OLD.getTime() + 1000),
    ran: () => fs.readdirSync(markers).length > 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
