import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { describe, it } from 'node:test';
import { freePort } from './ports.js';

describe('freePort', () => {
  it('picks a port outside the range of outgoing connections that can be listened on', async () => {
    const first = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      assert.ok(port >= 2048 && port < first, `${port} is not below ${first}`);
    }
    assert.equal(new Set(ports).size, ports.length, 'never the same port twice');
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(ports[0], '127.0.0.1', resolve));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
