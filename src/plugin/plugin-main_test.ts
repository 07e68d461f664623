// The plugin entry point: in process with captured output and a fake exit, and as a
// real child process (the compiled testing/fake-plugin.js) for exit codes and timing.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { goEmptyStruct, goInt, goString } from './gob/go-types.js';
import { MAX_LINE_CHARS, PluginLogSink } from './plugin-log.js';
import { NOT_A_PLUGIN_MESSAGE, runPlugin } from './plugin-main.js';
import type { PluginOptions } from './plugin-main.js';
import { FakeDriver } from './testing/fake-driver.js';
import { RpcTestClient } from './testing/rpc-test-client.js';

const FAKE_PLUGIN = fileURLToPath(new URL('./testing/fake-plugin.js', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

class Capture {
  text = '';
  write(text: string): boolean {
    this.text += text;
    return true;
  }
  get lines(): string[] {
    return this.text.split('\n').slice(0, -1);
  }
}

function inProcess(overrides: Partial<PluginOptions> = {}) {
  const stdout = new Capture();
  const stderr = new Capture();
  const exits: number[] = [];
  let exited: (code: number) => void = () => undefined;
  const exitCode = new Promise<number>((resolve) => (exited = resolve));
  const options: PluginOptions = {
    env: { MACHINE_PLUGIN_TOKEN: '42' },
    argv: ['/usr/bin/docker-machine-driver-fake', 'rancher-machine', 'create'],
    stdout,
    stderr,
    exit: (code) => {
      exits.push(code);
      exited(code);
    },
    handleProcessErrors: false,
    ...overrides,
  };
  return { stdout, stderr, exits, exitCode, options };
}

describe('runPlugin in process', () => {
  it('refuses to run without MACHINE_PLUGIN_TOKEN=42, with the exact message', async () => {
    for (const env of [{}, { MACHINE_PLUGIN_TOKEN: '41' }]) {
      const p = inProcess({ env });
      assert.equal(await runPlugin(() => new FakeDriver(), p.options), undefined);
      assert.deepEqual(p.exits, [1]);
      assert.equal(
        p.stderr.text,
        'This is a Docker Machine plugin binary.\n' +
          'Plugin binaries are not intended to be invoked directly.\n' +
          "Please use this plugin through the main 'docker-machine' binary.\n" +
          '(API version: 1)\n',
      );
      assert.equal(NOT_A_PLUGIN_MESSAGE, p.stderr.text);
      assert.equal(p.stdout.text, '');
    }
  });

  it('prints the address first, even when the driver logs while starting; debug goes to stderr', async () => {
    const p = inProcess();
    const env: NodeJS.ProcessEnv = { MACHINE_PLUGIN_TOKEN: '42' };
    let seenArgv: readonly string[] = [];
    const plugin = await runPlugin(
      (ctx) => {
        ctx.logger.info('loading the driver');
        ctx.logger.debug('details');
        seenArgv = ctx.argv;
        return new FakeDriver();
      },
      { ...p.options, env },
    );
    assert.ok(plugin);
    assert.match(p.stdout.lines[0] ?? '', /^127\.0\.0\.1:\d+$/);
    assert.equal(p.stdout.lines[0], plugin.address);
    assert.deepEqual(p.stdout.lines.slice(1), ['loading the driver']);
    assert.deepEqual(p.stderr.lines, ['details']);
    assert.equal(env.MACHINE_DEBUG, '1');
    assert.deepEqual(seenArgv, ['/usr/bin/docker-machine-driver-fake', 'rancher-machine', 'create']);
    await plugin.stop();
  });

  it('answers Close, then exits 0', async () => {
    const p = inProcess();
    const plugin = await runPlugin(() => new FakeDriver(), p.options);
    assert.ok(plugin);
    const client = await RpcTestClient.dial(plugin.address);
    assert.deepEqual(await client.call('RPCServerDriver.GetVersion', goInt), { reply: 1 });
    assert.deepEqual(p.exits, []);
    assert.deepEqual(await client.call('RPCServerDriver.Close', goEmptyStruct), { reply: {} });
    assert.equal(await p.exitCode, 0);
    assert.deepEqual(p.exits, [0]);
    await client.closed;
  });

  it('exits 1 when no request comes for the heartbeat timeout, counted from start-up', async () => {
    const p = inProcess({ heartbeatTimeoutMs: 150 });
    const started = Date.now();
    const plugin = await runPlugin(() => new FakeDriver(), p.options);
    assert.ok(plugin);
    assert.equal(await p.exitCode, 1);
    assert.ok(Date.now() - started >= 140);
  });

  it('stays up while requests keep coming, and exits 1 once they stop', async () => {
    const p = inProcess({ heartbeatTimeoutMs: 200 });
    const plugin = await runPlugin(() => new FakeDriver(), p.options);
    assert.ok(plugin);
    const client = await RpcTestClient.dial(plugin.address);
    for (let i = 0; i < 8; i++) {
      await sleep(80);
      assert.deepEqual(await client.call('RPCServerDriver.Heartbeat', goEmptyStruct), { reply: {} });
    }
    assert.deepEqual(p.exits, []);
    const stopped = Date.now();
    assert.equal(await p.exitCode, 1);
    assert.ok(Date.now() - stopped >= 150);
    client.close();
  });

  it('exits 1 with the error on stderr when the driver cannot be made', async () => {
    const p = inProcess();
    const result = await runPlugin(() => {
      throw new Error('no kubeconfig: token=abcdefghijklmnopqrstuvwxyz');
    }, p.options);
    assert.equal(result, undefined);
    assert.deepEqual(p.exits, [1]);
    assert.equal(p.stderr.text, 'Error loading driver: no kubeconfig: token=[REDACTED]\n');
    assert.equal(p.stdout.text, '');
  });
});

describe('PluginLogSink', () => {
  it('holds stdout lines until the address is out, splits and clips long lines', () => {
    const stdout = new Capture();
    const stderr = new Capture();
    const sink = new PluginLogSink(stdout, stderr);
    sink.write('info', 'early');
    sink.write('warn', 'two\nlines');
    sink.write('debug', 'dbg');
    assert.equal(stdout.text, '');
    sink.startStdout('127.0.0.1:1');
    sink.write('error', 'x'.repeat(MAX_LINE_CHARS + 5));
    assert.deepEqual(stdout.lines.slice(0, 4), ['127.0.0.1:1', 'early', 'two', 'lines']);
    assert.equal(stdout.lines[4], 'x'.repeat(MAX_LINE_CHARS) + ' … [5 more characters cut]');
    assert.deepEqual(stderr.lines, ['dbg']);
    assert.ok(Buffer.byteLength('€'.repeat(MAX_LINE_CHARS)) < 64 * 1024, 'a clipped line fits bufio.Scanner');
  });
});

/** Starts the compiled fake plugin as rancher-machine would. */
function spawnPlugin(env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [FAKE_PLUGIN, 'rancher-machine', 'create', '-d', 'fake', 'm1'], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout = createInterface({ input: child.stdout });
  const lines: string[] = [];
  const firstLine = new Promise<string>((resolve) => {
    stdout.on('line', (line) => {
      if (lines.length === 0) resolve(line);
      lines.push(line);
    });
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  return { child, firstLine, lines, exit, stderr: () => stderr };
}

describe('the plugin as a child process', () => {
  it('without the token: the message on stderr, nothing on stdout, exit 1', async () => {
    const p = spawnPlugin({});
    assert.equal(await p.exit, 1);
    assert.equal(p.stderr(), NOT_A_PLUGIN_MESSAGE);
    assert.deepEqual(p.lines, []);
  });

  it('serves, answers Close, then exits 0', async () => {
    const p = spawnPlugin({
      MACHINE_PLUGIN_TOKEN: '42',
      FAKE_DRIVER_SCRIPT: JSON.stringify({ createDelayMs: 300 }),
    });
    const address = await p.firstLine;
    assert.match(address, /^127\.0\.0\.1:\d+$/);
    const client = await RpcTestClient.dial(address);
    await client.call(
      'RPCServerDriver.SetConfigRaw',
      goEmptyStruct,
      { kind: 'bytes' },
      Buffer.from('{"MachineName":"m1"}'),
    );
    assert.deepEqual(await client.call('RPCServerDriver.GetMachineName', goString), { reply: 'm1' });
    // A Heartbeat is answered while Create is still running.
    const create = client.call('RPCServerDriver.Create', goEmptyStruct);
    const beat = await client.call('RPCServerDriver.Heartbeat', goEmptyStruct);
    assert.deepEqual(beat, { reply: {} });
    assert.deepEqual(await create, { reply: {} });
    assert.deepEqual(
      client.answered.slice(-2),
      [3n, 2n],
      'the heartbeat (seq 3) answered before Create (seq 2)',
    );
    assert.deepEqual(await client.call('RPCServerDriver.Close', goEmptyStruct), { reply: {} });
    assert.equal(await p.exit, 0);
    assert.ok(p.lines.includes('Creating the fake machine'), 'info lines on stdout');
    assert.match(p.stderr(), /The fake machine is created/, 'debug lines on stderr');
  });

  it('exits 1 after 10 s without a request when nobody ever connects', async () => {
    const started = Date.now();
    const p = spawnPlugin({ MACHINE_PLUGIN_TOKEN: '42' });
    await p.firstLine;
    assert.equal(await p.exit, 1);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 10_000 && elapsed < 12_000, `exited after ${elapsed} ms`);
  });
});
