// The single executable itself (what `npm run build` ships), without rancher-machine: run
// by hand it refuses with RegisterDriver's exact message; launched as rancher-machine
// launches it, the listen address is its very first stdout line, it answers net/rpc under
// both service names, and it exits 0 on Close; left alone it exits 1 after 10 s. It runs
// with no Node on PATH (the runtime is inside it). Go is not needed: never skipped.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { driverRegistry, mcnFlagSliceType } from '../../src/plugin/driver-types.js';
import { goEmptyStruct, goInt, goString } from '../../src/plugin/gob/go-types.js';
import { NOT_A_PLUGIN_MESSAGE } from '../../src/plugin/plugin-main.js';
import { RpcTestClient } from '../../src/plugin/testing/rpc-test-client.js';
import { pluginExecutable } from '../../sandbox/rancher-machine/plugin-executable.js';
import { PLUGIN_ENV, startPlugin } from './support/plugin-process.js';

/** No Node, no Go on PATH: the executable must bring its own runtime. */
const BARE_ENV = { PATH: '/nonexistent', HOME: '/nonexistent' };
/** The child's argv after the executable: rancher-machine's own argv. */
const RANCHER_MACHINE_ARGV = ['rancher-machine', 'create', '-d', 'harvester', 'm1'];

function runToEnd(
  file: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, RANCHER_MACHINE_ARGV, { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
