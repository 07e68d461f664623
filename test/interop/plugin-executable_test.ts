// The single executable itself (what `npm run build` ships), without rancher-machine: as
// docker-machine-driver-harvester run by hand it refuses with RegisterDriver's exact
// message; launched as rancher-machine launches it, the listen address is its very first
// stdout line, it answers net/rpc under both service names, and it exits 0 on Close; left
// alone it exits 1 after 10 s. As harvester-machine it is the CLI, `controller` the
// controller, and the plugin again in rancher-machine's plugin environment. It runs with
// no Node on PATH (the runtime is inside it).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { driverRegistry, mcnFlagSliceType } from '../../src/plugin/driver-types.js';
import { goEmptyStruct, goInt, goString } from '../../src/plugin/gob/go-types.js';
import { NOT_A_PLUGIN_MESSAGE } from '../../src/plugin/plugin-main.js';
import { RpcTestClient } from '../../src/plugin/testing/rpc-test-client.js';
import {
  harvesterMachineExecutable,
  pluginExecutable,
  unpackCacheEnv,
} from '../../sandbox/rancher-machine/plugin-executable.js';
import { PLUGIN_ENV, startPlugin } from './support/plugin-process.js';

/** No Node, no Go on PATH: the executable must bring its own runtime. */
const BARE_ENV = { PATH: '/nonexistent', HOME: '/nonexistent', ...unpackCacheEnv() };
/** The child's argv after the executable: rancher-machine's own argv. */
const RANCHER_MACHINE_ARGV = ['rancher-machine', 'create', '-d', 'harvester', 'm1'];
const VERSION_LINE =
  /^harvester-machine \d+\.\d+\.\d+ \(revision [0-9a-f]{12}(-dirty)?, Node\.js 24\.\d+\.\d+\)\n$/;

function runToEnd(
  file: string,
  env: NodeJS.ProcessEnv,
  args: readonly string[] = RANCHER_MACHINE_ARGV,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('the plugin executable (docker-machine-driver-harvester)', { timeout: 5 * 60_000 }, () => {
  let executable = '';
  before(async () => {
    executable = await pluginExecutable();
  });

  it("run by hand, exits 1 with RegisterDriver's exact message on stderr", async () => {
    for (const env of [BARE_ENV, { ...BARE_ENV, MACHINE_PLUGIN_TOKEN: '41' }]) {
      const run = await runToEnd(executable, env);
      assert.equal(run.code, 1);
      assert.equal(run.stderr, NOT_A_PLUGIN_MESSAGE);
      assert.equal(run.stdout, '');
    }
  });

  it('launched as rancher-machine does: the address is the first stdout line, it serves, and exits 0 after Close', async () => {
    const plugin = await startPlugin(executable, RANCHER_MACHINE_ARGV, { ...BARE_ENV, ...PLUGIN_ENV });
    try {
      assert.match(plugin.address, /^127\.0\.0\.1:\d+$/);
      assert.ok(plugin.stdout().startsWith(`${plugin.address}\n`), 'nothing before the address');
      const client = await RpcTestClient.dial(plugin.address, driverRegistry());
      assert.deepEqual(await client.call('RPCServerDriver.GetVersion', goInt), { reply: 1 });
      // The V0 name rancher-machine falls back to.
      assert.deepEqual(await client.call('RpcServerDriver.GetVersion', goInt), { reply: 1 });
      assert.deepEqual(await client.call('RPCServerDriver.DriverName', goString), { reply: 'harvester' });
      const flags = await client.call('RPCServerDriver.GetCreateFlags', mcnFlagSliceType);
      assert.ok('reply' in flags);
      const names = (flags.reply as Array<{ name: string; value: { Name?: string } } | null>).map(
        (f) => `${f?.name} ${f?.value.Name}`,
      );
      assert.ok(
        names.includes('*mcnflag.StringFlag harvester-kubeconfig-content'),
        names.slice(0, 3).join(', '),
      );
      assert.ok(names.includes('*mcnflag.IntFlag harvester-cpu-count'));
      assert.ok(names.includes('*mcnflag.BoolFlag harvester-enable-efi'));
      assert.deepEqual(await client.call('RPCServerDriver.Upgrade', goEmptyStruct), {
        error: "rpc: can't find method RPCServerDriver.Upgrade",
      });
      assert.deepEqual(await client.call('RPCServerDriver.Heartbeat', goEmptyStruct), { reply: {} });
      const closing = Date.now();
      // Like the Go plugin, ours may exit before its Close reply is read: the client ignores it.
      await client.call('RPCServerDriver.Close', goEmptyStruct).catch(() => undefined);
      const [code, signal] = await plugin.exited;
      assert.equal(signal, null);
      assert.equal(code, 0);
      assert.ok(Date.now() - closing < 2_000, `exited ${Date.now() - closing} ms after Close`);
      await client.closed;
    } finally {
      plugin.child.kill('SIGKILL');
    }
  });

  it('exits 1 when no request arrives for 10 s (rancher-machine is gone)', async () => {
    const plugin = await startPlugin(executable, RANCHER_MACHINE_ARGV, { ...BARE_ENV, ...PLUGIN_ENV });
    try {
      const started = Date.now();
      const [code] = await plugin.exited;
      const waited = Date.now() - started;
      assert.equal(code, 1);
      assert.ok(waited >= 9_500 && waited < 13_000, `exited after ${waited} ms`);
    } finally {
      plugin.child.kill('SIGKILL');
    }
  });
});

describe('the same executable as harvester-machine', { timeout: 5 * 60_000 }, () => {
  let executable = '';
  before(async () => {
    executable = await harvesterMachineExecutable();
  });

  it('is the CLI: --version names the version, the source revision and Node', async () => {
    const run = await runToEnd(executable, BARE_ENV, ['--version']);
    assert.equal(run.stderr, '');
    assert.match(run.stdout, VERSION_LINE);
    assert.equal(run.code, 0);
    const usage = await runToEnd(executable, BARE_ENV, ['--help']);
    assert.match(usage.stdout, /^Usage: harvester-machine \[options\] \[command\]/);
    assert.match(usage.stdout, /\n {2}volumes /);
  });

  it('is the controller for `controller`, with its own flags and exit codes', async () => {
    const help = await runToEnd(executable, BARE_ENV, ['controller', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^harvester-machine-controller \[flags\]\n/);
    const bad = await runToEnd(executable, BARE_ENV, ['controller', '--no-such-flag']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /no-such-flag/);
  });

  it("is the plugin in rancher-machine's plugin environment, whatever its name", async () => {
    const plugin = await startPlugin(executable, RANCHER_MACHINE_ARGV, { ...BARE_ENV, ...PLUGIN_ENV });
    try {
      assert.match(plugin.address, /^127\.0\.0\.1:\d+$/);
      const client = await RpcTestClient.dial(plugin.address, driverRegistry());
      assert.deepEqual(await client.call('RPCServerDriver.DriverName', goString), { reply: 'harvester' });
      await client.call('RPCServerDriver.Close', goEmptyStruct).catch(() => undefined);
      assert.deepEqual(await plugin.exited, [0, null]);
    } finally {
      plugin.child.kill('SIGKILL');
    }
  });
});
