// The machine lifecycle through the built CLI against the sandbox: create (flags and
// their environment variables), ls / inspect / status / ip with their JSON, stop, start,
// restart, rm; the store's layout and modes (0700 directories, 0600 files, no secret in
// what the read commands print); and the exit codes of a failed pre-create check (3),
// an unconfirmed rm (2) and a machine whose VM is gone (4).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Vmi } from '../src/harvester-access/harvester-api.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import type { VirtualMachine } from '../src/harvester/types.js';
import { eventually } from './support/eventually.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { CliRunner, MACHINE_FLAGS, kubeconfigFile, mode, tempDir } from './cli-harness.js';

const fixture = useSandbox();
const dir = tempDir('hm-cli-life-');
const cli = new CliRunner(path.join(dir, 'store'));
const ns = 'default';

interface LsEntry {
  name: string;
  state: string;
  vm: string;
  ip: string;
  clusterName: string;
  error: string | null;
}

describe('harvester-machine lifecycle', () => {
  it('creates a machine from flags and environment variables and saves it like rancher-machine', async () => {
    const { sandbox } = fixture;
    const kubeconfig = kubeconfigFile(dir, 'direct', sandbox.kubeconfigs.harvesterDirect);
    const name = 'cli-life-pool1-a1b2c-x1';
    const created = await cli.expect(
      0,
      [
        'create',
        name,
        '--kubeconfig',
        kubeconfig,
        '--harvester-cluster-name=cli-life',
        '--harvester-cpu-count',
        '1',
        ...MACHINE_FLAGS,
      ],
      // The command line wins over the variable (cpu), the variable over the default (memory).
      { env: { HARVESTER_CPU_COUNT: '4', HARVESTER_MEMORY_SIZE: '2' } },
    );
    assert.match(
      created.stdout,
      new RegExp(`^Machine ${name} created: VM default/${name}, IP \\d+\\.\\d+\\.\\d+\\.\\d+\\n$`),
    );
    // Not a terminal: plain progress lines on stderr, none redrawn in place.
    assert.match(created.stderr, /\[ *\d+\.\d s\] checking Harvester before creating VM default\//);
    assert.match(
      created.stderr,
      /\[ *\d+\.\d s\] waiting for VM default\/cli-life-pool1-a1b2c-x1 to be Running: /,
    );
    assert.ok(!created.stderr.includes('\r') && !created.stderr.includes('\u001b['), 'no control characters');

    const vm = await sandbox.harvester.admin.get<VirtualMachine & KubeObject>(Resources.virtualMachine, {
      namespace: ns,
      name,
    });
    const domain = vm.spec.template.spec.domain as {
      cpu?: { cores?: number };
      resources?: { limits?: Record<string, string> };
    };
    assert.equal(domain.cpu?.cores, 1);
    assert.equal(domain.resources?.limits?.['memory'], '2Gi');
    assert.equal(vm.metadata.labels?.['guestcluster.harvesterhci.io/name'], 'cli-life');

    const machines = path.join(cli.store, 'machines');
    const machineDir = path.join(machines, name);
    assert.equal(mode(machines), 0o700);
    assert.equal(mode(machineDir), 0o700);
    assert.deepEqual(fs.readdirSync(machineDir).sort(), ['config.json', 'id_rsa', 'id_rsa.pub']);
    for (const file of fs.readdirSync(machineDir))
      assert.equal(mode(path.join(machineDir, file)), 0o600, file);
    const host = JSON.parse(fs.readFileSync(path.join(machineDir, 'config.json'), 'utf8')) as {
      ConfigVersion: number;
      DriverName: string;
      Name: string;
      HostOptions: { Driver: string };
      Driver: Record<string, unknown>;
    };
    assert.equal(host.ConfigVersion, 3);
    assert.equal(host.DriverName, 'harvester');
    assert.equal(host.Name, name);
    assert.equal(host.HostOptions.Driver, 'harvester');
    assert.equal(host.Driver['MachineName'], name);
    assert.equal(host.Driver['StorePath'], cli.store);
    assert.equal(host.Driver['SSHKeyPath'], path.join(machineDir, 'id_rsa'));
    assert.equal(host.Driver['KubeConfigContent'], sandbox.kubeconfigs.harvesterDirect);
    assert.match(String(host.Driver['IPAddress']), /^\d+\.\d+\.\d+\.\d+$/);
  });

  it('lists, inspects and reports state and IP as JSON, without any secret', async () => {
    const { sandbox } = fixture;
    const name = 'cli-life-pool1-a1b2c-x1';
    const token = sandbox.directUser.token;
    const ls = (await cli.expect(0, ['ls', '-o', 'json'])).json<LsEntry[]>();
    assert.equal(ls.length, 1);
    assert.deepEqual(
      {
        name: ls[0]?.name,
        state: ls[0]?.state,
        vm: ls[0]?.vm,
        cluster: ls[0]?.clusterName,
        error: ls[0]?.error,
      },
      { name, state: 'Running', vm: `default/${name}`, cluster: 'cli-life', error: null },
    );
    const table = await cli.expect(0, ['ls']);
    assert.match(table.stdout, /^NAME +STATE +VM +CLUSTER +IP/);
    assert.match(table.stdout, new RegExp(`\\n${name} +Running +default/${name} +cli-life +\\d`));

    const inspect = await cli.expect(0, ['inspect', name, '--output', 'json']);
    const info = inspect.json<{
      ip: string;
      vm: string;
      credential: { identity: string };
      config: { Driver: Record<string, unknown> };
    }>();
    assert.equal(info.config.Driver['KubeConfigContent'], '[REDACTED]');
    assert.match(info.credential.identity, new RegExp(`^bootstrap token ${sandbox.directUser.tokenId}$`));
    assert.equal(info.ip, ls[0]?.ip);

    const status = (await cli.expect(0, ['status', name, '-o', 'json'])).json<{
      state: string;
      vm: string;
    }>();
    assert.deepEqual(status, { name, vm: `default/${name}`, state: 'Running' });
    assert.equal((await cli.expect(0, ['status', name])).stdout, 'Running\n');
    const ip = (await cli.expect(0, ['ip', name, '-o', 'json'])).json<{ ip: string; ipv6: string | null }>();
    assert.equal(ip.ip, info.ip);
    assert.equal((await cli.expect(0, ['ip', name])).stdout, `${info.ip}\n`);

    const secretPart = token.split('.')[1] ?? 'never';
    for (const output of [ls, inspect.stdout, table.stdout].map((o) => JSON.stringify(o))) {
      assert.ok(!output.includes(secretPart), 'no token in the output');
      assert.ok(!output.includes('BEGIN RSA PRIVATE KEY'), 'no private key in the output');
    }
  });

  it('stops, starts and restarts the machine', async () => {
    const { sandbox } = fixture;
    const name = 'cli-life-pool1-a1b2c-x1';
    const stopped = await cli.expect(0, ['stop', name]);
    assert.equal(stopped.stdout, `Machine ${name} stopped\n`);
    assert.equal((await cli.expect(0, ['status', name])).stdout, 'Stopped\n');
    const noIp = await cli.expect(1, ['ip', name]);
    assert.match(noIp.stderr, /Host is not running/);
    await cli.expect(0, ['stop', name]); // already stopped: still success

    assert.match(
      (await cli.expect(0, ['start', name])).stdout,
      new RegExp(`^Machine ${name} started \\(IP \\d`),
    );
    assert.equal((await cli.expect(0, ['status', name])).stdout, 'Running\n');
    const before = await sandbox.harvester.admin.get<Vmi>(Resources.virtualMachineInstance, {
      namespace: ns,
      name,
    });
    assert.match((await cli.expect(0, ['restart', name])).stdout, /restarted \(IP /);
    const after = await sandbox.harvester.admin.get<Vmi>(Resources.virtualMachineInstance, {
      namespace: ns,
      name,
    });
    assert.notEqual(after.metadata.uid, before.metadata.uid, 'a new VM instance');
  });

  it('removes only when confirmed, then forgets the machine; a machine whose VM is gone exits 4', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const name = 'cli-life-pool1-a1b2c-x1';
    const unconfirmed = await cli.expect(2, ['rm', name]);
    assert.match(unconfirmed.stderr, /not confirmed \(stdin is not a terminal\); pass --yes/);
    assert.ok(await admin.find(Resources.virtualMachine, { namespace: ns, name }), 'still there');

    assert.equal(
      (await cli.expect(0, ['rm', '-y', name])).stdout,
      `Machine ${name} removed (VM default/${name})\n`,
    );
    assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name }), undefined);
    assert.equal(fs.existsSync(path.join(cli.store, 'machines', name)), false);
    await cli.expect(4, ['status', name]);

    // A machine whose VM was deleted behind its back: status/start exit 4, rm forgets it.
    const kubeconfig = kubeconfigFile(dir, 'direct', sandbox.kubeconfigs.harvesterDirect);
    const gone = 'cli-life-pool1-a1b2c-x2';
    await cli.expect(0, ['create', gone, '--kubeconfig', kubeconfig, ...MACHINE_FLAGS]);
    await admin.delete(Resources.virtualMachine, { namespace: ns, name: gone });
    await eventually(
      `VM ${ns}/${gone} to be gone`,
      async () => !(await admin.find(Resources.virtualMachine, { namespace: ns, name: gone })),
    );
    const status = await cli.expect(4, ['status', gone, '-o', 'json']);
    assert.equal(status.json<{ state: string }>().state, 'NotFound');
    assert.match((await cli.expect(4, ['start', gone])).stderr, /no longer exists on Harvester/);
    await cli.expect(0, ['rm', '--yes', gone]);
    assert.deepEqual((await cli.expect(0, ['ls', '-o', 'json'])).json(), []);
  });

  it('exits 3 when the pre-create check fails, creating nothing and keeping nothing', async () => {
    const { sandbox } = fixture;
    const kubeconfig = kubeconfigFile(dir, 'direct', sandbox.kubeconfigs.harvesterDirect);
    const name = 'cli-life-pool1-a1b2c-x3';
    const flags = MACHINE_FLAGS.filter((f) => !f.startsWith('--harvester-image-name'));
    const failed = await cli.expect(3, [
      'create',
      name,
      '--kubeconfig',
      kubeconfig,
      '--harvester-image-name=default/no-such-image',
      ...flags,
    ]);
    assert.match(
      failed.stderr,
      /pre-create check failed \(1 problem\): image default\/no-such-image \(--harvester-image-name\) not found/,
    );
    assert.equal(
      await sandbox.harvester.admin.find(Resources.virtualMachine, { namespace: ns, name }),
      undefined,
    );
    assert.equal(fs.existsSync(path.join(cli.store, 'machines', name)), false);
  });
  it('exits 6 when a wait times out, saying what it waited for, and keeps the machine for rm', async () => {
    const { sandbox } = fixture;
    const kubeconfig = kubeconfigFile(dir, 'direct', sandbox.kubeconfigs.harvesterDirect);
    const name = 'cli-life-pool1-a1b2c-x4';
    sandbox.standIns.configure({ noIp: (vm) => vm.name === name });
    const flags = MACHINE_FLAGS.filter((f) => !f.startsWith('--harvester-ip-timeout'));
    const timedOut = await cli.expect(6, [
      'create',
      name,
      '--kubeconfig',
      kubeconfig,
      '--harvester-ip-timeout=2',
      ...flags,
    ]);
    assert.match(
      timedOut.stderr,
      new RegExp(`timed out after 2 s waiting for VM default/${name} to report an IP address`),
    );
    assert.match(timedOut.stderr, new RegExp(`"harvester-machine rm ${name}" removes whatever was created`));
    assert.equal((await cli.expect(0, ['status', name])).stdout, 'Running\n');
    await cli.expect(0, ['rm', '-y', name]);
    assert.equal(
      await sandbox.harvester.admin.find(Resources.virtualMachine, { namespace: ns, name }),
      undefined,
    );
  });
});
