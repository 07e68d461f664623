// A client's answer cap (TransportOptions.maxResponseBytes, a guest's apiserver gets a few MiB):
// counted on unpacked bytes as the 64 MiB default is, for a whole answer and for each watch
// event, an error of that client only (another client of the same server keeps the default).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import zlib from 'node:zlib';
import { isTooLarge } from './errors.js';
import { Resources } from './resources.js';
import { ScriptedServer, watchLine } from './testing.js';

const MIB = 1024 * 1024;
/** A list of `bytes` (about): one Secret whose data fills it. */
const listOf = (bytes: number): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'SecretList',
    metadata: { resourceVersion: '1' },
    items: [{ metadata: { name: 's', namespace: 'default' }, data: { v: 'x'.repeat(bytes) } }],
  });

describe('answer cap', async () => {
  const server = await ScriptedServer.start((req, res) => {
    const size = Number(req.query.get('labelSelector')?.split('=')[1] ?? 0);
    if (req.query.get('watch') === '1') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        watchLine('ADDED', {
          metadata: { name: 'big', namespace: 'default', resourceVersion: '2' },
          data: { v: 'x'.repeat(size) },
        }),
      );
      return;
    }
    // Gzipped: a few KB on the wire for MiB unpacked.
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
    res.end(zlib.gzipSync(listOf(size)));
  });
  after(() => server.close());
  const once = { retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 } };

  it('refuses a gzipped answer that unpacks past the cap, and takes one below it', async () => {
    const capped = server.client({ ...once, maxResponseBytes: 4 * MIB });
    const list = await capped.list(Resources.secret, { namespace: 'default', labelSelector: `n=${3 * MIB}` });
    assert.equal(list.items.length, 1);
    const err = await capped
      .list(Resources.secret, { namespace: 'default', labelSelector: `n=${5 * MIB}` })
      .then(
        () => assert.fail('a 5 MiB answer was taken'),
        (e: unknown) => e,
      );
    assert.ok(isTooLarge(err), String(err));
    assert.match(String(err), /response larger than 4 MiB \(unpacked\) from http:\/\/127\.0\.0\.1:\d+/);
    // Another client of the same server (Harvester's, Rancher's) keeps the default.
    const plain = server.client(once);
    assert.equal(
      (await plain.list(Resources.secret, { namespace: 'default', labelSelector: `n=${5 * MIB}` })).items
        .length,
      1,
    );
  });

  it('ends a watch whose event is past the cap with that error', async () => {
    const capped = server.client({ ...once, maxResponseBytes: 1 * MIB });
    const seen: string[] = [];
    const watch = capped.watch(
      Resources.secret,
      { namespace: 'default', labelSelector: `n=${2 * MIB}` },
      (e) => seen.push(e.object.metadata.name),
    );
    const err = await watch.done.then(
      () => assert.fail('the watch ended well'),
      (e: unknown) => e,
    );
    assert.ok(isTooLarge(err), String(err));
    assert.match(String(err), /watch event larger than 1 MiB/);
    assert.equal(seen.length, 0, 'no event past the cap was handed on');
    const small = capped.watch(
      Resources.secret,
      { namespace: 'default', labelSelector: `n=${MIB / 2}` },
      (e) => seen.push(e.object.metadata.name),
    );
    await small.done;
    assert.deepEqual(seen, ['big']);
  });
});
