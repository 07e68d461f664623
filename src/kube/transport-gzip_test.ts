// Compressed answers: every request but a watch asks for gzip, as client-go does; a gzipped
// answer is unpacked (its size limit counts what it unpacks to), a plain one read as it is.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import zlib from 'node:zlib';
import { Resources } from './resources.js';
import { ScriptedServer } from './testing.js';

const items = Array.from({ length: 2_000 }, (_, i) => ({
  metadata: { name: `vm-${i}`, namespace: 'default', resourceVersion: String(i + 1) },
  spec: {
    template: { spec: { volumes: [{ name: 'disk-0', persistentVolumeClaim: { claimName: `pvc-${i}` } }] } },
  },
}));
const listBody = JSON.stringify({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineList',
  metadata: { resourceVersion: '9' },
  items,
});

describe('transport compression', async () => {
  let bytesSent = 0;
  const server = await ScriptedServer.start((req, res) => {
    if (req.query.get('watch') === '1') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end();
      return;
    }
    const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    if (req.path.endsWith('/bomb')) {
      // 80 MiB of zeros, a few KB on the wire: the limit is on what it unpacks to.
      const packed = zlib.gzipSync(Buffer.alloc(80 * 1024 * 1024, 0x20));
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
      res.end(packed);
      return;
    }
    const body = gzip ? zlib.gzipSync(listBody, { level: 1 }) : Buffer.from(listBody);
    bytesSent += body.length;
    res.writeHead(200, {
      'Content-Type': 'application/json',
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
    });
    res.end(body);
  });
  after(() => server.close());

  it('asks for gzip and reads the unpacked list: the same objects for a fraction of the bytes', async () => {
    const client = server.client();
    const list = await client.list(Resources.virtualMachine, { namespace: 'default' });
    assert.equal(list.items.length, 2_000);
    assert.equal(list.items[1_999]?.metadata.name, 'vm-1999');
    const asked = server.lists().at(-1);
    assert.equal(asked?.headers['accept-encoding'], 'gzip');
    assert.ok(
      bytesSent * 5 < Buffer.byteLength(listBody),
      `${bytesSent} bytes for ${Buffer.byteLength(listBody)}`,
    );
  });

  it('does not ask for gzip when compression is off (a client of an apiserver on its own network)', async () => {
    const client = server.client({ compression: false });
    const list = await client.list(Resources.virtualMachine, { namespace: 'default' });
    assert.equal(list.items.length, 2_000);
    assert.equal(server.lists().at(-1)?.headers['accept-encoding'], undefined);
  });

  it('does not ask for gzip on a watch', async () => {
    const client = server.client();
    const watch = client.watch(Resources.virtualMachine, { namespace: 'default' }, () => undefined);
    await server.arrival(1, (r) => r.query.get('watch') === '1', 'the watch');
    watch.stop();
    await watch.done.catch(() => undefined);
    assert.equal(server.watches()[0]?.headers['accept-encoding'], undefined);
  });

  it('refuses an answer that unpacks beyond the limit', async () => {
    const client = server.client({ retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 } });
    await assert.rejects(
      client.get(Resources.virtualMachine, { namespace: 'default', name: 'bomb' }),
      /larger than 64 MiB/,
    );
  });
});
