// The net/rpc server in process, driven by a TypeScript client: handshake, concurrent
// calls matched by Seq, net/rpc's error strings, broken input, backpressure.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { driverRegistry } from './driver-types.js';
import { GobDecoder } from './gob/decoder.js';
import { GobEncoder, gobItem } from './gob/encoder.js';
import { goEmptyStruct, goInt, goString } from './gob/go-types.js';
import { EMPTY_STRUCT, rpcRequestType, rpcResponseType } from './net-rpc-types.js';
import { RpcServer } from './rpc-server.js';
import { rpcMethod } from './rpc-service.js';
import type { RpcMethod } from './rpc-service.js';
import { RpcTestClient, exchangeRaw, readHead } from './testing/rpc-test-client.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A service with one method per behaviour under test. */
function testService(state: { running: number; maxRunning: number; afterReply: number; requests: string[] }) {
  const methods = new Map<string, RpcMethod>([
    ['Echo', rpcMethod(goString, goString, (s) => s)],
    [
      'Sleep',
      rpcMethod(goInt, goInt, async (ms) => {
        state.running++;
        state.maxRunning = Math.max(state.maxRunning, state.running);
        await sleep(ms);
        state.running--;
        return ms;
      }),
    ],
    ['Big', rpcMethod(goInt, goString, (n) => 'x'.repeat(n))],
    [
      'Fail',
      rpcMethod(goEmptyStruct, goEmptyStruct, () => {
        throw new Error('it failed with token: abcdefghijklmnopqrstuvwxyz012345');
      }),
    ],
    [
      'FailEmpty',
      rpcMethod(goEmptyStruct, goEmptyStruct, () => {
        throw new Error('');
      }),
    ],
    [
      'ThrowString',
      rpcMethod(goEmptyStruct, goEmptyStruct, () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error
        throw 'plain string';
      }),
    ],
    ['BadReply', rpcMethod(goEmptyStruct, goInt, () => 1.5)],
    [
      'FailHuge',
      rpcMethod(goEmptyStruct, goEmptyStruct, () => {
        throw new Error('y'.repeat(11 * 1024 * 1024));
      }),
    ],
    [
      'Done',
      rpcMethod(
        goEmptyStruct,
        goEmptyStruct,
        () => EMPTY_STRUCT,
        () => state.afterReply++,
      ),
    ],
  ]);
  return new Map([['Test', methods]]);
}

describe('RpcServer', () => {
  const state = { running: 0, maxRunning: 0, afterReply: 0, requests: [] as string[] };
  let server: RpcServer;
  let address: string;

  before(async () => {
    server = new RpcServer({
      services: testService(state),
      registry: driverRegistry(),
      onRequest: (sm) => state.requests.push(sm),
      maxInFlight: 4,
      handshakeTimeoutMs: 300,
    });
    address = await server.listen();
  });
  after(() => server.close());

  it('listens on 127.0.0.1 and answers the CONNECT handshake', async () => {
    assert.match(address, /^127\.0\.0\.1:\d+$/);
    const client = await RpcTestClient.dial(address);
    assert.deepEqual(await client.call('Test.Echo', goString, goString, 'hi'), { reply: 'hi' });
    client.close();
  });

  it('accepts the first request in the same packet as the handshake', async () => {
    const call = new GobEncoder(driverRegistry()).encodeAll([
      gobItem(rpcRequestType, { ServiceMethod: 'Test.Echo', Seq: 7n }),
      gobItem(goString, 'early'),
    ]);
    const answer = await firstAnswer(address, [
      Buffer.concat([Buffer.from('CONNECT /_goRPC_ HTTP/1.0\n\n'), call]),
    ]);
    assert.deepEqual(answer, { header: { ServiceMethod: 'Test.Echo', Seq: 7n, Error: '' }, body: 'early' });
  });

  it('refuses what is not a CONNECT to /_goRPC_, like Go', async () => {
    const get = await exchangeRaw(address, 'GET /_goRPC_ HTTP/1.0\r\n\r\n');
    assert.match(get, /^HTTP\/1\.0 405 Method Not Allowed\r\n[\s\S]*\r\n\r\n405 must CONNECT\n$/);
    assert.match(await exchangeRaw(address, 'CONNECT /other HTTP/1.0\n\n'), /^HTTP\/1\.0 404 Not Found/);
    assert.match(await exchangeRaw(address, 'hello\n\n'), /^HTTP\/1\.1 400 Bad Request/);
    assert.match(await exchangeRaw(address, 'CONN', 'ECT /x HTTP/1.0\n', '\n'), / 404 /);
  });

  it('drops a connection that never sends its request line', async () => {
    const started = Date.now();
    assert.equal(await exchangeRaw(address, 'CONNECT /_goR'), '');
    assert.ok(Date.now() - started >= 250);
  });

  it('serves calls concurrently and matches answers by Seq', async () => {
    const client = await RpcTestClient.dial(address);
    const slow = client.call('Test.Sleep', goInt, goInt, 300);
    const quick = await Promise.all(
      [1, 2, 3].map((n) => client.call('Test.Echo', goString, goString, `q${n}`)),
    );
    assert.deepEqual(quick, [{ reply: 'q1' }, { reply: 'q2' }, { reply: 'q3' }]);
    assert.deepEqual(await slow, { reply: 300 });
    // Seq 0 (the slow call) was answered last.
    assert.deepEqual(client.answered, [1n, 2n, 3n, 0n]);
    client.close();
  });

  it("answers with net/rpc's own error strings and keeps the connection", async () => {
    const client = await RpcTestClient.dial(address);
    assert.deepEqual(await client.call('Test.Nope', goString), { error: "rpc: can't find method Test.Nope" });
    assert.deepEqual(await client.call('Nope.Echo', goString), {
      error: "rpc: can't find service Nope.Echo",
    });
    assert.deepEqual(await client.call('NoDot', goString), {
      error: 'rpc: service/method request ill-formed: NoDot',
    });
    assert.deepEqual(await client.call('Test.Echo', goString, goString, 'still here'), {
      reply: 'still here',
    });
    client.close();
  });

  it('answers an argument of the wrong type with the decoding error, then goes on', async () => {
    const client = await RpcTestClient.dial(address);
    const wrong = await client.call('Test.Echo', goString, goInt, 5);
    assert.ok(
      'error' in wrong && /decoding into local type string, received remote type int/.test(wrong.error),
    );
    assert.deepEqual(await client.call('Test.Echo', goString, goString, 'ok'), { reply: 'ok' });
    client.close();
  });

  it('sends method errors as Response.Error, redacted and never empty', async () => {
    const client = await RpcTestClient.dial(address);
    const failed = await client.call('Test.Fail', goEmptyStruct);
    assert.ok('error' in failed);
    assert.match(failed.error, /^it failed with token: \[REDACTED\]$/);
    assert.deepEqual(await client.call('Test.FailEmpty', goEmptyStruct), {
      error: 'Error with an empty message',
    });
    assert.deepEqual(await client.call('Test.ThrowString', goEmptyStruct), { error: 'plain string' });
    const huge = await client.call('Test.FailHuge', goEmptyStruct);
    assert.ok('error' in huge);
    assert.equal(huge.error, `${'y'.repeat(16_000)} … [${11 * 1024 * 1024 - 16_000} more characters cut]`);
    const bad = await client.call('Test.BadReply', goInt);
    assert.ok(
      'error' in bad &&
        /cannot send the reply of Test\.BadReply: .*cannot encode 1\.5 as int/.test(bad.error),
    );
    client.close();
  });

  it('writes every answer whole: large concurrent answers never interleave', async () => {
    const client = await RpcTestClient.dial(address);
    const sizes = [200_000, 3, 150_000, 70_000, 1, 99_999, 250_000, 10];
    const results = await Promise.all(sizes.map((n) => client.call('Test.Big', goString, goInt, n)));
    assert.deepEqual(
      results.map((r) => ('reply' in r ? r.reply.length : -1)),
      sizes,
    );
    client.close();
  });

  it('runs at most maxInFlight calls at once per connection', async () => {
    state.maxRunning = 0;
    const client = await RpcTestClient.dial(address);
    const calls = Array.from({ length: 10 }, () => client.call('Test.Sleep', goInt, goInt, 50));
    assert.equal((await Promise.all(calls)).length, 10);
    assert.equal(state.maxRunning, 4);
    client.close();
  });

  it('still answers calls in progress after the client shuts its side, then closes', async () => {
    const client = await RpcTestClient.dial(address);
    const slow = client.call('Test.Sleep', goInt, goInt, 100);
    client.endWriting();
    assert.deepEqual(await slow, { reply: 100 });
    await client.closed;
  });

  it('closes the connection on a header it cannot decode, after answering calls in progress', async () => {
    const client = await RpcTestClient.dial(address);
    const slow = client.call('Test.Sleep', goInt, goInt, 100);
    // A well-framed message whose value is a string, not a Request.
    client.writeRaw(new GobEncoder(driverRegistry()).encode(goString, 'not a header'));
    assert.deepEqual(await slow, { reply: 100 });
    await client.closed;
  });

  it('closes the connection on a message length over the limit', async () => {
    const client = await RpcTestClient.dial(address);
    client.writeRaw(Uint8Array.of(0xf8, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
    await client.closed;
  });

  it('reports every request header to onRequest and runs afterReply once the answer is written', async () => {
    state.requests.length = 0;
    const client = await RpcTestClient.dial(address);
    await client.call('Test.Done', goEmptyStruct);
    await client.call('Test.Missing', goEmptyStruct);
    await sleep(10);
    assert.deepEqual(state.requests, ['Test.Done', 'Test.Missing']);
    assert.equal(state.afterReply, 1);
    client.close();
  });

  it('serves a request that trickles in one byte at a time', async () => {
    const bytes = new GobEncoder(driverRegistry()).encodeAll([
      gobItem(rpcRequestType, { ServiceMethod: 'Test.Echo', Seq: 0n }),
      gobItem(goString, 'trickle'),
    ]);
    const writes = [...Buffer.from('CONNECT /_goRPC_ HTTP/1.0\n\n'), ...bytes].map((b) => Uint8Array.of(b));
    const answer = await firstAnswer(address, writes);
    assert.deepEqual(answer, { header: { ServiceMethod: 'Test.Echo', Seq: 0n, Error: '' }, body: 'trickle' });
  });
});

/** Writes raw chunks (1 ms apart) and decodes the first answer, a string. */
async function firstAnswer(
  address: string,
  writes: Uint8Array[],
): Promise<{ header: unknown; body: unknown }> {
  const [host = '', port = ''] = address.split(':');
  const socket = connect({ host, port: Number(port) });
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const answer = readHead(socket).then(
    ({ rest }) =>
      new Promise<{ header: unknown; body: unknown }>((resolve) => {
        const decoder = new GobDecoder(driverRegistry());
        let header: unknown;
        const take = (chunk: Uint8Array): void => {
          decoder.push(chunk);
          if (header === undefined) {
            const h = decoder.read(rpcResponseType);
            if (!h.done) return;
            header = h.value;
          }
          const body = decoder.read(goString);
          if (body.done) resolve({ header, body: body.value });
        };
        socket.on('data', take);
        take(rest);
      }),
  );
  for (const chunk of writes) {
    socket.write(chunk);
    if (writes.length > 1) await sleep(1);
  }
  try {
    return await answer;
  } finally {
    socket.destroy();
  }
}
