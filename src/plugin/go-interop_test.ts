// Interop with Go's real net/rpc and encoding/gob (no rancher-machine needed):
// test/go-rpc-client, a stdlib-only Go program, launches the compiled fake plugin the
// way rancher-machine does and checks every answer; it also prints Go's encodings and
// decodes ours. Built once per source version, cached under ~/.cache/harvester-machine.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { GOB_NAMES, driverOptionsInterface, mcnFlagSliceType } from './driver-types.js';
import { toGoFlag } from './driver-service.js';
import { GobDecoder } from './gob/decoder.js';
import { GobEncoder } from './gob/encoder.js';
import type { GoType } from './gob/go-types.js';
import { emptyStructType, rpcRequestType, rpcResponseType } from './net-rpc-types.js';
import { GO_FIXTURES, fixtureBytes } from './testing/go-fixtures.js';
import type { GoFixtureName } from './testing/go-fixtures.js';
import { toHex } from './testing/hex.js';
import { everythingType, sampleEverything, sampleRegistry } from './testing/sample-types.js';

const run = promisify(execFile);
const FAKE_PLUGIN = fileURLToPath(new URL('./testing/fake-plugin.js', import.meta.url));

/** The repository: where test/go-rpc-client is (cwd when run as documented, else up from here). */
function findSourceDir(): string | undefined {
  const candidates = [process.env.HARVESTER_MACHINE_ROOT, process.cwd()];
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    candidates.push(dir);
  }
  for (const root of candidates) {
    if (root !== undefined && existsSync(join(root, 'test/go-rpc-client/go.mod'))) {
      return resolve(root, 'test/go-rpc-client');
    }
  }
  return undefined;
}

/** Builds the client unless a binary of exactly this source and Go version is cached. */
function buildClient(sourceDir: string): string {
  const goVersion = spawnSync('go', ['version'], { encoding: 'utf8' }).stdout;
  const hash = createHash('sha256').update(goVersion);
  for (const name of readdirSync(sourceDir).sort()) {
    if (name === 'go.mod' || name.endsWith('.go'))
      hash.update(name).update(readFileSync(join(sourceDir, name)));
  }
  const dir = join(homedir(), '.cache/harvester-machine/go-rpc-client', hash.digest('hex').slice(0, 16));
  const binary = join(dir, 'go-rpc-client');
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.${process.pid}.partial`;
  const built = spawnSync('go', ['build', '-o', partial, '.'], {
    cwd: sourceDir,
    encoding: 'utf8',
    env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-buildvcs=false' },
  });
  if (built.status !== 0) throw new Error(`go build failed:\n${built.stderr}`);
  renameSync(partial, binary);
  return binary;
}

const goAvailable = spawnSync('go', ['version']).status === 0;
const sourceDir = findSourceDir();
const skip = !goAvailable
  ? 'go is not installed'
  : sourceDir === undefined
    ? 'test/go-rpc-client not found'
    : false;

describe('interop with Go net/rpc and encoding/gob', { skip, timeout: 180_000 }, () => {
  let client = '';
  before(() => {
    client = buildClient(sourceDir ?? '');
  });

  it('a Go net/rpc client, launching the plugin like rancher-machine, gets every answer right', async () => {
    const { stdout } = await run(client, ['run', process.execPath, FAKE_PLUGIN], {
      env: {
        ...process.env,
        FAKE_DRIVER_SCRIPT: JSON.stringify({
          createDelayMs: 1500,
          errors: { getIPv6: 'IPv6 address is not set' },
          crashes: { kill: 'TypeError' },
        }),
      },
      timeout: 60_000,
    });
    const lines = stdout.split('\n');
    assert.equal(lines.filter((l) => l === 'PASS').length, 1, stdout);
    for (const expected of [
      'ok GetCreateFlags',
      'ok GetConfigRaw flag values',
      "ok Upgrade: rpc: can't find method RPCServerDriver.Upgrade",
      'ok plugin exited with status 0 after Close',
    ]) {
      assert.ok(lines.includes(expected), `${expected}\n${stdout}`);
    }
    assert.ok(lines.some((l) => /^ok heartbeats during Create: \d+ answered/.test(l)));
    // Our log lines, as rancher-machine shows them: info on stdout, debug on stderr ("DBG |").
    assert.ok(lines.includes('(m1) Creating the fake machine'), stdout);
    assert.ok(lines.includes('(m1) DBG | The fake machine is created'), stdout);
  });

  it("Go's encodings today decode as the stored fixtures do", async () => {
    const { stdout } = await run(client, ['fixtures']);
    const current = new Map(
      stdout
        .trim()
        .split('\n')
        .map((line) => line.split(' ') as [string, string]),
    );
    assert.deepEqual([...current.keys()].sort(), Object.keys(GO_FIXTURES).sort());
    const types: Record<GoFixtureName, Array<GoType | undefined>> = {
      'config-raw': [{ kind: 'bytes' }],
      everything: [everythingType],
      'everything-zero': [everythingType],
      flags: [mcnFlagSliceType],
      'request-getversion': [rpcRequestType, emptyStructType],
      'response-error': [rpcResponseType, emptyStructType],
      'response-string': [rpcResponseType, { kind: 'string' }],
      'response-version': [rpcResponseType, { kind: 'int' }],
      'rpcflags-all': [driverOptionsInterface],
      'rpcflags-nested': [driverOptionsInterface],
      'rpcflags-one': [driverOptionsInterface],
      'state-running': [{ kind: 'int' }],
      'two-requests': [rpcRequestType, emptyStructType, rpcRequestType, emptyStructType],
    };
    const decode = (bytes: Uint8Array, list: Array<GoType | undefined>): unknown[] => {
      const decoder = new GobDecoder(sampleRegistry());
      decoder.push(bytes);
      return list.map((t) => {
        const r = t === undefined ? decoder.skip() : decoder.read(t);
        assert.ok(r.done);
        return r.value;
      });
    };
    for (const [name, hex] of current) {
      const list = types[name as GoFixtureName];
      assert.deepEqual(
        decode(Buffer.from(hex, 'hex'), list),
        decode(fixtureBytes(name as GoFixtureName), list),
        name,
      );
    }
  });

  it('Go decodes our encodings to what it decodes from its own', async () => {
    const goDecode = async (kind: string, bytes: Uint8Array): Promise<string> =>
      (await run(client, ['decode', kind, toHex(bytes)])).stdout;
    const ours = new GobEncoder(sampleRegistry());
    const cases: Array<[string, Uint8Array, GoFixtureName]> = [
      ['everything', ours.encode(everythingType, sampleEverything()), 'everything'],
      [
        'flags',
        new GobEncoder(sampleRegistry()).encode(mcnFlagSliceType, [
          toGoFlag({ kind: 'string', name: 'fake-kc', usage: 'kc', envVar: 'FAKE_KC', value: 'dflt' }),
          toGoFlag({ kind: 'int', name: 'fake-cpu', usage: 'cpus', envVar: 'FAKE_CPU', value: 2 }),
          toGoFlag({ kind: 'bool', name: 'fake-debug', usage: 'debug', envVar: '' }),
          toGoFlag({ kind: 'stringSlice', name: 'fake-list', usage: 'list', envVar: '', value: ['a', 'b'] }),
        ]),
        'flags',
      ],
      [
        'rpcflags',
        new GobEncoder(sampleRegistry()).encode(driverOptionsInterface, {
          name: GOB_NAMES.rpcFlags,
          value: { Values: new Map([['fake-kc', { name: 'string', value: 'KC' }]]) },
        }),
        'rpcflags-one',
      ],
    ];
    for (const [kind, bytes, fixture] of cases) {
      const fromOurs = await goDecode(kind, bytes);
      assert.doesNotMatch(fromOurs, /^ERROR/, fromOurs);
      assert.equal(fromOurs, await goDecode(kind, fixtureBytes(fixture)), kind);
    }
  });
});
