// The executable where the Go driver runs: an empty root filesystem, as user 1000, with
// /tmp the only writable place (support/empty-root.ts) — no loader, no libc, no /proc, no
// /dev, an empty environment. It prints its version, answers rancher-machine's plugin
// handshake, and serves a whole create and rm driven by the real rancher-machine (a static
// Go binary) inside the same root against the sandbox on 127.0.0.1; as `controller` it
// leads and syncs against the sandbox's Rancher. Racing first runs unpack it once. Where
// no directory is writable it runs from memory (which needs /proc), never from a /tmp
// directory another user could have prepared, and without /proc either it says why it
// cannot start.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { driverRegistry, mcnFlagSliceType } from '../../src/plugin/driver-types.js';
import { goEmptyStruct, goInt } from '../../src/plugin/gob/go-types.js';
import { RpcTestClient } from '../../src/plugin/testing/rpc-test-client.js';
import { registerSecret } from '../../src/log/redact.js';
import { pluginExecutable } from '../../sandbox/rancher-machine/plugin-executable.js';
import {
  INSTALL_SCRIPT,
  poolConfig,
  rancherCreateArgs,
  rancherRemoveArgs,
} from '../../sandbox/rancher-machine/rancher-job.js';
import {
  rancherMachineBinary,
  rancherMachineSkipReason,
} from '../../sandbox/rancher-machine/rancher-machine.js';
import { pluginSurvivors } from '../../sandbox/rancher-machine/plugin-processes.js';
import { recordOutput } from '../../sandbox/secret-ledger.js';
import { eventually } from '../support/eventually.js';
import { useSandbox } from '../support/sandbox-fixture.js';
import { buildGoHelper } from '../support/go-helper.js';
import { EmptyRoot, ROOT_USER, emptyRootSkipReason, payloadDirNames, walk } from './support/empty-root.js';
import { PLUGIN_ENV, startPlugin } from './support/plugin-process.js';

const skip = emptyRootSkipReason();
const PLUGIN = '/bin/docker-machine-driver-harvester';
const CLI = '/bin/harvester-machine';

describe('the executable in an empty root filesystem', { timeout: 5 * 60_000 }, () => {
  if (skip) {
    it('runs in an empty root', { skip }, () => undefined);
    return;
  }
  let root: EmptyRoot;
  before(async () => {
    const executable = await pluginExecutable();
    root = new EmptyRoot('hm-empty-root');
    root.add(executable, PLUGIN);
    root.add(executable, CLI);
  });
  after(() => root?.remove());

  it('prints its version and revision with nothing but the file and a tmpfs /tmp', async () => {
    const run = await root.run([CLI, '--version']);
    assert.equal(run.stderr, '');
    assert.match(
      run.stdout,
      /^harvester-machine \d+\.\d+\.\d+ \(revision [0-9a-f]{12}(-dirty)?, Node\.js 24\.\d+\.\d+\)\n$/,
    );
    assert.equal(run.code, 0);
  });

  it("answers rancher-machine's handshake and RPCs, and exits 0 on Close", async () => {
    const cmd = root.command([PLUGIN, 'rancher-machine', 'create', '-d', 'harvester', 'm1'], {
      env: PLUGIN_ENV,
    });
    const plugin = await startPlugin(cmd.command, cmd.args, cmd.env, 60_000);
    try {
      assert.match(plugin.address, /^127\.0\.0\.1:\d+$/);
      const client = await RpcTestClient.dial(plugin.address, driverRegistry());
      assert.deepEqual(await client.call('RPCServerDriver.GetVersion', goInt), { reply: 1 });
      const flags = await client.call('RPCServerDriver.GetCreateFlags', mcnFlagSliceType);
      assert.ok('reply' in flags && Array.isArray(flags.reply) && flags.reply.length > 20);
      await client.call('RPCServerDriver.Close', goEmptyStruct).catch(() => undefined);
      assert.deepEqual(await plugin.exited, [0, null]);
    } finally {
      plugin.child.kill('SIGKILL');
    }
  });

  it('unpacks once when first runs race, each into its own temporary directory, the first rename winning', async () => {
    // Four starts share one /tmp and have nowhere else to go (no HOME, no /proc): a run that
    // found a half-unpacked directory, or lost the race badly, would fail.
    const tmp = root.userDir('race-tmp');
    const runs = await Promise.all(
      [1, 2, 3, 4].map(() => root.run([CLI, '--version'], { tmp: { bind: tmp } })),
    );
    for (const run of runs) {
      assert.equal(run.stderr, '');
      assert.match(run.stdout, /^harvester-machine /);
      assert.equal(run.code, 0);
    }
    const unpacked = fs.readdirSync(path.join(tmp, `harvester-machine-${ROOT_USER}`)).sort();
    assert.equal(unpacked.length, 2, unpacked.join(', '));
    assert.match(unpacked[0] ?? '', /^app-[0-9a-f]{20}$/);
    assert.match(unpacked[1] ?? '', /^runtime-[0-9a-f]{20}$/);
  });

  it('runs from memory when its /tmp directory is not its own, and leaves that directory alone', async () => {
    // Another user made /tmp/harvester-machine-1000 first, world-writable: using it would run
    // whatever they put there. With /proc, the runtime goes into memory files instead.
    const tmp = root.userDir('hostile-tmp');
    fs.chmodSync(tmp, 0o1777);
    fs.chownSync(tmp, 0, 0);
    const hostile = path.join(tmp, `harvester-machine-${ROOT_USER}`);
    fs.mkdirSync(hostile, { mode: 0o777 });
    fs.chmodSync(hostile, 0o777);
    const run = await root.run([CLI, '--version'], { tmp: { bind: tmp }, proc: true });
    assert.equal(run.stderr, '');
    assert.match(run.stdout, /^harvester-machine /);
    assert.equal(run.code, 0);
    assert.deepEqual(fs.readdirSync(hostile), []);
  });

  it("never runs a cache planted under a shared /tmp: another user's root, a link to one, or a part directory not its own", async () => {
    const planted = buildGoHelper('planted-loader');
    const dirs = payloadDirNames(fs.readFileSync(root.dir + CLI));
    const OTHER = 2000;
    /** Another user's tree: both part directories, the runtime's loader their program. */
    const plant = (at: string, owner: number): void => {
      for (const part of Object.values(dirs))
        fs.mkdirSync(path.join(at, part, 'lib'), { recursive: true, mode: 0o755 });
      fs.copyFileSync(planted, path.join(at, dirs.runtime, 'lib', 'ld-linux-x86-64.so.2'));
      fs.chmodSync(path.join(at, dirs.runtime, 'lib', 'ld-linux-x86-64.so.2'), 0o755);
      for (const file of walk(at)) fs.lchownSync(file, owner, owner);
      fs.lchownSync(at, owner, owner);
    };
    const sharedTmp = (name: string): string => {
      const tmp = root.userDir(name);
      fs.chownSync(tmp, 0, 0);
      fs.chmodSync(tmp, 0o1777);
      return tmp;
    };
    const cases: Array<[string, (tmp: string) => void]> = [
      [
        'the root made by another user',
        (tmp) => {
          fs.mkdirSync(path.join(tmp, `harvester-machine-${ROOT_USER}`), { mode: 0o755 });
          plant(path.join(tmp, `harvester-machine-${ROOT_USER}`), OTHER);
        },
      ],
      [
        "the root a symbolic link to another user's directory",
        (tmp) => {
          fs.mkdirSync(path.join(tmp, 'elsewhere'), { mode: 0o755 });
          plant(path.join(tmp, 'elsewhere'), OTHER);
          fs.symlinkSync(path.join('/tmp', 'elsewhere'), path.join(tmp, `harvester-machine-${ROOT_USER}`));
          fs.lchownSync(path.join(tmp, `harvester-machine-${ROOT_USER}`), OTHER, OTHER);
        },
      ],
      [
        'a part directory in its own root owned by another user',
        (tmp) => {
          const own = path.join(tmp, `harvester-machine-${ROOT_USER}`);
          fs.mkdirSync(own, { mode: 0o700 });
          plant(own, OTHER);
          fs.chownSync(own, ROOT_USER, ROOT_USER);
        },
      ],
    ];
    for (const [what, setUp] of cases) {
      const tmp = sharedTmp(`planted-${cases.findIndex(([w]) => w === what)}`);
      setUp(tmp);
      const run = await root.run([CLI, '--version'], { tmp: { bind: tmp }, proc: true });
      assert.equal(
        fs.existsSync(path.join(tmp, 'PLANTED-LOADER-RAN')),
        false,
        `${what}: the planted loader ran`,
      );
      assert.doesNotMatch(run.stdout, /planted loader ran/, what);
      assert.match(run.stdout, /^harvester-machine /, `${what}: ${run.stderr}`);
      assert.equal(run.code, 0, what);
    }
  });

  it('heals a cache that lost a file: the next start unpacks that part again and runs', async () => {
    const tmp = root.userDir('heal-tmp');
    const first = await root.run([CLI, '--version'], { tmp: { bind: tmp } });
    assert.equal(first.code, 0, first.stderr);
    const cache = path.join(tmp, `harvester-machine-${ROOT_USER}`);
    const runtime = fs.readdirSync(cache).find((d) => d.startsWith('runtime-')) ?? '';
    // What a temp reaper does to a file it finds old.
    fs.rmSync(path.join(cache, runtime, 'node'));
    const second = await root.run([CLI, '--version'], { tmp: { bind: tmp } });
    assert.equal(second.stderr, '');
    assert.match(second.stdout, /^harvester-machine /);
    assert.equal(second.code, 0);
    assert.ok(fs.existsSync(path.join(cache, runtime, 'node')), 'node is back');
    assert.deepEqual(
      fs.readdirSync(cache).filter((d) => d.startsWith('.tmp-')),
      [],
      'the damaged copy is not left aside',
    );
  });

  it('without a writable directory or /proc, says what it tried and exits 126', async () => {
    const run = await root.run([CLI, '--version'], { tmp: 'none' });
    assert.equal(run.code, 126);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /^harvester-machine: cannot start the bundled Node runtime; tried:\n/);
    assert.match(run.stderr, /\/tmp\/harvester-machine-1000: .*permission denied/);
    assert.match(run.stderr, /in memory: no \/proc\/self\/fd/);
  });
});

describe(
  'rancher-machine and the plugin in an empty root, against the sandbox',
  { timeout: 10 * 60_000 },
  () => {
    const why = skip || rancherMachineSkipReason();
    if (why) {
      it('creates and removes a machine', { skip: why }, () => undefined);
      return;
    }
    const fixture = useSandbox();
    let root: EmptyRoot;
    let state = '';
    before(async () => {
      const [rancherMachine, executable] = await Promise.all([rancherMachineBinary(), pluginExecutable()]);
      root = new EmptyRoot('hm-empty-root-rm');
      root.add(rancherMachine, '/bin/rancher-machine');
      root.add(executable, PLUGIN);
      root.add(executable, CLI);
      root.write('/run/secrets/machine/value', INSTALL_SCRIPT);
      // /tmp outlives each command: the store is in it (HOME=/tmp/home), from create to rm.
      state = root.userDir('tmp');
    });
    after(() => root?.remove());

    const instance = 'empty-root-pool1-5b6c7d8e9-q1w2e';
    const inRoot = async (args: string[]) => {
      const { sandbox } = fixture;
      registerSecret(sandbox.kubeconfigs.harvesterViaRancher);
      const env = {
        PATH: '/bin',
        HOME: '/tmp/home',
        HARVESTER_KUBECONFIG_CONTENT: sandbox.kubeconfigs.harvesterViaRancher,
        HARVESTER_CLUSTER_ID: sandbox.clusterId,
        HARVESTER_CLUSTER_TYPE: 'imported',
      };
      fs.mkdirSync(path.join(state, 'home'), { recursive: true });
      fs.chownSync(path.join(state, 'home'), ROOT_USER, ROOT_USER);
      const run = await root.run(
        ['/bin/rancher-machine', ...args],
        { tmp: { bind: state }, devNull: true, env },
        180_000,
      );
      recordOutput(
        `rancher-machine ${args.find((a) => !a.startsWith('-')) ?? ''} (empty root)`,
        run.stdout + run.stderr,
      );
      assert.deepEqual(await pluginSurvivors(PLUGIN), [], 'no plugin process outlives rancher-machine');
      return run;
    };

    it('create --custom-install-script … makes the VM; rm -y --update-config removes it', async () => {
      const { admin } = fixture.sandbox.harvester;
      const namespace = fixture.sandbox.seeds.namespace;
      const create = await inRoot(
        rancherCreateArgs({
          instance,
          clusterName: 'empty-root',
          installScript: '/run/secrets/machine/value',
          config: poolConfig(fixture.sandbox.seeds),
        }),
      );
      assert.equal(create.code, 0, `create failed:\n${create.stdout}${create.stderr}`);
      assert.match(create.stdout, /Custom install script was sent via userdata, provisioning complete/);
      assert.ok(await admin.find(Resources.virtualMachine, { namespace, name: instance }));

      const rm = await inRoot(rancherRemoveArgs({ instance }));
      assert.equal(rm.code, 0, `rm failed:\n${rm.stdout}${rm.stderr}`);
      assert.match(rm.stdout, new RegExp(`Successfully removed ${instance}`));
      assert.equal(await admin.find(Resources.virtualMachine, { namespace, name: instance }), undefined);
    });

    it('as `controller`, becomes leader and syncs its caches against the Rancher cluster', async () => {
      const { sandbox } = fixture;
      registerSecret(sandbox.kubeconfigs.rancherLocal);
      const kubeconfig = root.write('/etc/rancher-local.kubeconfig', sandbox.kubeconfigs.rancherLocal);
      const rancher = sandbox.rancher.admin;
      if (!(await rancher.find(Resources.namespace, { name: 'cattle-system' })))
        await rancher.create<KubeObject>(Resources.namespace, {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: 'cattle-system' },
        });
      const argv = [CLI, 'controller', '--kubeconfig', kubeconfig, '--metrics-bind-address', '127.0.0.1:0'];
      const cmd = root.command(argv, { tmp: { bind: state } });
      const child = spawn(cmd.command, cmd.args, { env: cmd.env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
      const logged = (msg: string): boolean => out.split('\n').some((l) => l.includes(`"msg":"${msg}"`));
      try {
        await eventually(
          `the controller's "became leader" and "caches synced" lines`,
          () => Promise.resolve(logged('became leader') && logged('caches synced')),
          120_000,
        ).catch((err: unknown) => {
          throw new Error(`${String(err)}; its output:\n${out}`);
        });
      } finally {
        child.kill('SIGKILL');
        recordOutput('harvester-machine controller (empty root)', out);
      }
    });
  },
);
