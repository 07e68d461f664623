// The CLI's contract without a Harvester: help with every flag and its default, exit
// codes for bad flags, values and names (2), and a machine not in the store (4); a
// configuration error leaves nothing in the store.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { FLAG_TABLE } from '../src/driver/config/flags.js';
import { CliRunner, kubeconfigFile, tempDir } from './cli-harness.js';

const dir = tempDir('hm-cli-usage-');
const cli = new CliRunner(path.join(dir, 'store'));
const unreachable = kubeconfigFile(
  dir,
  'unreachable',
  [
    'apiVersion: v1',
    'kind: Config',
    'clusters: [{name: h, cluster: {server: "https://127.0.0.1:1"}}]',
    'users: [{name: u, user: {token: "abcdef.0123456789abcdef"}}]',
    'contexts: [{name: h, context: {cluster: h, user: u}}]',
    'current-context: h',
  ].join('\n'),
);

describe('harvester-machine without a Harvester', () => {
  it('--help documents the commands and the exit codes; create --help every flag with its default and variable', async () => {
    const top = await cli.expect(0, ['--help']);
    for (const command of [
      'create',
      'ls',
      'inspect',
      'status',
      'ip',
      'start',
      'stop',
      'restart',
      'rm',
      'volumes',
      'leftovers',
      'doctor',
    ])
      assert.match(top.stdout, new RegExp(`\\n  ${command} `), command);
    for (const code of ['0', '1', '2', '3', '4', '5', '6'])
      assert.match(top.stdout, new RegExp(`\\n  ${code}  \\S`));
    const help = (await cli.expect(0, ['create', '--help'])).stdout.replace(/\s+/g, ' ');
    for (const flag of FLAG_TABLE) {
      const shown = flag.kind === 'string' ? JSON.stringify(flag.defaultValue) : String(flag.defaultValue);
      assert.ok(help.includes(`--${flag.name}`), `--${flag.name} in create --help`);
      assert.ok(
        help.includes(`(default: ${shown}; env: ${flag.envVar})`),
        `default and variable of --${flag.name}`,
      );
    }
  });

  it('exits 2 naming the flag, the value or the variable that is wrong', async () => {
    const unknown = await cli.expect(2, ['create', 'm1', '--harvester-cpu-cuont=2']);
    assert.match(unknown.stderr, /unknown option '--harvester-cpu-cuont=2'/);
    const badInt = await cli.expect(2, ['create', 'm1', '--harvester-cpu-count', 'two']);
    assert.match(badInt.stderr, /--harvester-cpu-count <n>' argument 'two' is invalid/);
    const badEnv = await cli.expect(2, ['create', 'm1', '--kubeconfig', unreachable], {
      env: { HARVESTER_ENABLE_EFI: 'yes please' },
    });
    assert.match(badEnv.stderr, /HARVESTER_ENABLE_EFI \(for --harvester-enable-efi\) must be true or false/);
    await cli.expect(2, ['create', 'Not_A_Name', '--kubeconfig', unreachable]);
    await cli.expect(2, ['ls', '--output', 'yaml']);
    await cli.expect(2, ['volumes', 'orphaned', '--yes']);
    await cli.expect(2, ['leftovers', '--yes']);
    await cli.expect(2, ['doctor', '--cloud-credential', 'cattle-global-data:cc-x']);
  });

  it('exits 2 on an invalid machine configuration, listing each problem by flag, and keeps nothing', async () => {
    const result = await cli.expect(2, [
      'create',
      'bad-config',
      '--kubeconfig',
      unreachable,
      '--harvester-disk-info={not json',
      '--harvester-network-model=e1000x',
    ]);
    assert.match(result.stderr, /--harvester-disk-info: /);
    assert.match(result.stderr, /--harvester-network-model: /);
    assert.doesNotMatch(result.stderr, /0123456789abcdef/, 'no token in errors');
    assert.equal(fs.existsSync(path.join(cli.store, 'machines', 'bad-config')), false);
  });

  it('exits 4 for a machine that is not in the store', async () => {
    for (const command of ['inspect', 'status', 'ip', 'start', 'stop', 'restart', 'rm']) {
      const result = await cli.expect(4, [
        command,
        'no-such-machine',
        ...(command === 'rm' ? ['--yes'] : []),
      ]);
      assert.match(result.stderr, /machine "no-such-machine" not found in the store/);
    }
    await cli.expect(4, ['rm', '--dry-run', 'no-such-machine']);
    assert.deepEqual((await cli.expect(0, ['ls', '-o', 'json'])).json(), []);
  });
});
