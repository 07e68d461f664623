// Fuzzing of the plugin's net/rpc framing over real sockets: the plugin runs as rancher-machine
// runs it (a child process, here around the fake driver) and is fed random handshakes,
// random bytes after a good handshake, mutated captures of real requests (Go's and ours),
// well-formed headers with garbage bodies, and messages that claim or carry megabytes. The
// gob decoder alone is fuzzed in src/plugin/gob/hostile-input_test.ts; this is the whole
// server: every connection must be closed by the plugin within a deadline once we are done
// sending (no hang), the process must live on and keep answering a good client (no crash),
// its RSS must stay bounded, and no call that would change a machine may ever run.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { driverRegistry } from '../../src/plugin/driver-types.js';
import { GobEncoder, gobItem } from '../../src/plugin/gob/encoder.js';
import { goBytes, goInt, type GoType } from '../../src/plugin/gob/go-types.js';
import { EMPTY_STRUCT, emptyStructType, rpcRequestType } from '../../src/plugin/net-rpc-types.js';
import { fixtureBytes } from '../../src/plugin/testing/go-fixtures.js';
import { RpcTestClient } from '../../src/plugin/testing/rpc-test-client.js';
import { recordOutput } from '../../sandbox/secret-ledger.js';

const FAKE_PLUGIN = fileURLToPath(new URL('../../src/plugin/testing/fake-plugin.js', import.meta.url));
const HANDSHAKE = Buffer.from('CONNECT /_goRPC_ HTTP/1.0\n\n');
/** Once we stop sending, the plugin must have closed the connection within this. */
const CLOSE_DEADLINE_MS = 5_000;
/** Calls that would change a machine (on Harvester, through a real driver). */
const MUTATING =
  /rpc: call (RPCServerDriver|RpcServerDriver)\.(Create|Remove|Start|Stop|Restart|Kill|PreCreateCheck)\b/;

const plugin = { child: undefined as ChildProcess | undefined, address: '', stderr: '' };

before(async () => {
  const child = spawn(process.execPath, [FAKE_PLUGIN], {
    env: {
      PATH: process.env['PATH'] ?? '',
      MACHINE_PLUGIN_TOKEN: '42',
      // No heartbeats here: the watchdog must not end the process under test.
      FAKE_PLUGIN_HEARTBEAT_TIMEOUT_MS: '3600000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  plugin.child = child;
  child.stderr?.on('data', (b: Buffer) => (plugin.stderr += b.toString()));
  plugin.address = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) resolve(line.trim());
    });
    child.once('exit', (code) => reject(new Error(`the plugin exited (${code}) before listening`)));
  });
});

after(async () => {
  const child = plugin.child;
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  recordOutput('fake plugin stderr', plugin.stderr);
});

function rssMiB(): number {
  const status = fs.readFileSync(`/proc/${plugin.child?.pid ?? 0}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

/**
 * Sends `chunks` on a new connection, then closes our side; resolves with how long the plugin
 * took to close its side after that (it must, whatever we sent).
 */
async function feed(chunks: readonly Uint8Array[]): Promise<number> {
  const [host = '', port = ''] = plugin.address.split(':');
  const socket = connect({ host, port: Number(port) });
  socket.on('data', () => undefined); // answers, if any, are read and dropped
  socket.on('error', () => undefined); // a reset by the plugin is a fine way to close
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  for (const chunk of chunks) {
    if (socket.destroyed) break;
    socket.write(chunk);
  }
  socket.end();
  const ended = performance.now();
  const deadline = new Promise<'hung'>((resolve) =>
    setTimeout(() => resolve('hung'), CLOSE_DEADLINE_MS).unref(),
  );
  if ((await Promise.race([closed, deadline])) === 'hung') {
    socket.destroy();
    throw new Error(`the plugin kept the connection open ${CLOSE_DEADLINE_MS} ms after we stopped sending`);
  }
  return performance.now() - ended;
}

/** Splits bytes at the given cut points (random chunking over the socket). */
function chunked(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const borders = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const to of [...borders, bytes.length]) {
    if (to > from) out.push(bytes.subarray(from, to));
    from = to;
  }
  return out;
}

const encoder = new GobEncoder(driverRegistry());
function request(
  method: string,
  seq: bigint,
  argType: GoType = emptyStructType,
  arg: unknown = EMPTY_STRUCT,
): Uint8Array {
  return encoder.encodeAll([
    gobItem(rpcRequestType, { ServiceMethod: method, Seq: seq }),
    { type: argType, value: arg },
  ]);
}

/** Real request streams (after the handshake) that change nothing: Go's captures and ours. */
const SEEDS: Uint8Array[] = [
  fixtureBytes('request-getversion'),
  fixtureBytes('two-requests'),
  request('RPCServerDriver.GetMachineName', 3n),
  request('RPCServerDriver.GetSSHPort', 4n),
  request('RPCServerDriver.SetConfigRaw', 5n, goBytes, Buffer.from('{"MachineName":"m1","SSHPort":2222}')),
  Buffer.concat([request('RPCServerDriver.GetState', 6n), request('RPCServerDriver.GetCreateFlags', 7n)]),
];

const mutation = fc.record({
  at: fc.nat(),
  op: fc.constantFrom('set', 'insert', 'delete', 'flip', 'duplicate', 'truncate'),
  byte: fc.integer({ min: 0, max: 255 }),
  span: fc.integer({ min: 1, max: 64 }),
});

interface Edit {
  at: number;
  op: string;
  byte: number;
  span: number;
}

function mutate(seed: Uint8Array, edits: readonly Edit[]): Uint8Array {
  let bytes = [...seed];
  for (const e of edits) {
    const at = e.at % (bytes.length + 1);
    if (e.op === 'set') bytes[at] = e.byte;
    else if (e.op === 'insert') bytes.splice(at, 0, e.byte);
    else if (e.op === 'delete') bytes.splice(at, e.span);
    else if (e.op === 'flip') bytes[at] = (bytes[at] ?? 0) ^ (1 << (e.byte % 8));
    else if (e.op === 'duplicate') bytes.splice(at, 0, ...bytes.slice(at, at + e.span));
    else bytes = bytes.slice(0, at);
  }
  return Uint8Array.from(bytes);
}

/**
 * A good client still gets its answer, promptly. The plugin serves 16 connections at once and
 * keeps a connection it gave up on for up to 2 s after closing its side (it stops reading, so
 * it does not see ours close): after a burst of hostile ones, a new connection may have to wait.
 */
async function stillServes(): Promise<void> {
  let client: RpcTestClient | undefined;
  const deadline = Date.now() + 3_000;
  while (!client) {
    client = await RpcTestClient.dial(plugin.address).catch((err: unknown) => {
      if (Date.now() > deadline) throw err;
      return new Promise<undefined>((r) => setTimeout(() => r(undefined), 100));
    });
  }
  try {
    const answer = await Promise.race([
      client.call('RPCServerDriver.GetVersion', goInt),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('no answer within 2 s')), 2_000).unref(),
      ),
    ]);
    assert.deepEqual(answer, { reply: 1 });
  } finally {
    client.close();
  }
}

describe('net/rpc framing under fuzzing (real sockets, plugin process)', () => {
  const closes: number[] = [];
  let rssBefore = 0;
  let rssAfterSmall = 0;
  const rssByRound: number[] = [];
  let rssPeak = 0;
  let sampler: NodeJS.Timeout | undefined;

  before(async () => {
    // Warm up (JIT, buffers), then take the reference RSS.
    for (let i = 0; i < 20; i++) await stillServes();
    rssBefore = rssMiB();
    sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMiB())), 100);
  });
  after(() => clearInterval(sampler));

  it('random handshakes, with and without the real one inside', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 600 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 4 }),
        async (bytes, embed, cuts) => {
          const input = embed
            ? Buffer.concat([bytes.subarray(0, 8), HANDSHAKE.subarray(0, 10), bytes.subarray(8)])
            : bytes;
          closes.push(await feed(chunked(input, cuts)));
        },
      ),
      { numRuns: 200 },
    );
    await stillServes();
  });

  it('random bytes after a good handshake, in random chunks', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 4096 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        async (bytes, cuts) => {
          closes.push(await feed([HANDSHAKE, ...chunked(bytes, cuts)]));
        },
      ),
      { numRuns: 500 },
    );
    await stillServes();
  });

  it('mutated captures of real requests (Go’s bytes and ours)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SEEDS.keys()),
        fc.array(mutation, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        async (seed, edits, cuts) => {
          const bytes = mutate(SEEDS[seed] ?? new Uint8Array(), edits);
          closes.push(await feed([HANDSHAKE, ...chunked(bytes, cuts)]));
        },
      ),
      { numRuns: 1_000 },
    );
    await stillServes();
  });

  it('well-formed headers of any method and sequence number with garbage bodies', async () => {
    const methods = [
      'RPCServerDriver.GetVersion',
      'RPCServerDriver.SetConfigRaw',
      'RPCServerDriver.SetConfigFromFlags',
      'RPCServerDriver.GetState',
      'RpcServerDriver.GetURL',
      'RPCServerDriver.',
      '.GetVersion',
      'NoDot',
      '',
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom(...methods), fc.string({ maxLength: 300 })),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.uint8Array({ maxLength: 512 }),
        async (method, seq, body) => {
          const header = encoder.encodeAll([gobItem(rpcRequestType, { ServiceMethod: method, Seq: seq })]);
          closes.push(await feed([HANDSHAKE, header, body]));
        },
      ),
      { numRuns: 300 },
    );
    await stillServes();
  });

  it('messages that claim or carry megabytes, eight connections at once', async () => {
    rssAfterSmall = rssMiB();
    const claims = [10 * 1024 * 1024, 10 * 1024 * 1024 + 1, 2 ** 40, 2 ** 62].map((n) => {
      const prefix = Buffer.alloc(9);
      prefix[0] = 0xf8; // 8-byte big-endian count follows (gob's unsigned encoding)
      prefix.writeBigUInt64BE(BigInt(n), 1);
      return prefix;
    });
    const carried = (size: number): Buffer => {
      const prefix = Buffer.alloc(5);
      prefix[0] = 0xfc; // 4-byte count
      prefix.writeUInt32BE(size, 1);
      return Buffer.concat([prefix, Buffer.alloc(size, 0x41)]);
    };
    // Four rounds, each given the time to let go of what it buffered.
    for (let round = 0; round < 4; round++) {
      const inputs = [
        ...claims,
        carried(9 * 1024 * 1024),
        carried(9 * 1024 * 1024),
        carried(3 * 1024 * 1024),
        claims[0] ?? Buffer.alloc(0),
      ];
      const times = await Promise.all(inputs.map((bytes) => feed([HANDSHAKE, bytes])));
      closes.push(...times);
      // Past the 2 s the plugin keeps a connection it gave up on (with its buffers).
      await new Promise((r) => setTimeout(r, 2_500));
      rssByRound.push(rssMiB());
    }
    await stillServes();
  });

  it('lives on, never ran a call that changes a machine, kept its memory bounded, closed every connection promptly', (t) => {
    assert.equal(plugin.child?.exitCode, null, 'the plugin process is alive');
    assert.doesNotMatch(plugin.stderr, /Plugin crashed/);
    assert.doesNotMatch(plugin.stderr, MUTATING);
    const small = rssAfterSmall - rssBefore;
    const peak = rssPeak - rssBefore;
    const last = rssByRound.at(-1) ?? 0;
    const slowest = Math.max(...closes);
    t.diagnostic(
      `${closes.length} connections; RSS ${rssBefore.toFixed(0)} MiB at the start, +${small.toFixed(0)} MiB after the small hostile inputs, peak +${peak.toFixed(0)} MiB with the megabyte messages, after each of their rounds ${rssByRound.map((r) => r.toFixed(0)).join(', ')} MiB; slowest close ${slowest.toFixed(0)} ms`,
    );
    assert.ok(small < 40, `thousands of small hostile connections grew RSS by ${small.toFixed(0)} MiB`);
    // Eight connections may each buffer up to the 10 MiB message limit at once (and a copy).
    assert.ok(peak < 8 * 10 * 2 + 40, `RSS peaked ${peak.toFixed(0)} MiB above the start`);
    // What stays afterwards is bounded the same way (V8 keeps some of the heap it grew; the
    // rounds' figures are in the diagnostic above).
    assert.ok(
      last - rssBefore < 8 * 10 * 2 + 40,
      `RSS ended ${(last - rssBefore).toFixed(0)} MiB above the start`,
    );
    assert.ok(closes.length >= 2_000, `${closes.length} connections`);
  });
});
