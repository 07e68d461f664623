// The real rancher-machine with our plugin executable: three machines of one pool created at
// once, each by its own create job (its own "pod": bin dir, empty home, store), with
// --harvester-ip-pool-info on a VLAN without DHCP, get three distinct addresses of the range,
// keep them through stop, start and restart, and free them on rm. Beside them, the same three
// without a pool, so the two create times can be compared (printed).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { LABEL_ADDRESS_CLAIM } from '../../src/harvester/fixed-addresses/address-claims.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { installPlugin, pluginExecutable } from '../../sandbox/rancher-machine/plugin-executable.js';
import { INSTALL_SCRIPT, poolConfig, rancherCreateArgs } from '../../sandbox/rancher-machine/rancher-job.js';
import {
  MachineCli,
  rancherMachineBinary,
  rancherMachineSkipReason,
} from '../../sandbox/rancher-machine/rancher-machine.js';
import { SEED_STATIC_NETWORK, SEED_STATIC_SUBNET } from '../../sandbox/sandbox-seeds.js';
import { eventually } from '../support/eventually.js';
import { useSandbox } from '../support/sandbox-fixture.js';
import { installGuestSsh } from './support/guest-ssh.js';
import { readHostDocument } from './support/machine-store.js';
import { tempRoot } from './support/repo.js';

const NS = 'default';
const skip = rancherMachineSkipReason();
const RANGE = '192.168.100.60-192.168.100.69';

/** What the command printed itself (rancher-machine's forwarded plugin lines left out). */
const own = (stdout: string): string =>
  stdout
    .split('\n')
    .filter((l) => !/^\([^)]*\) /.test(l))
    .join('\n');

describe('rancher-machine: a pool of three machines with fixed addresses', { timeout: 10 * 60_000 }, () => {
  if (skip) {
    it('runs rancher-machine', { skip }, () => undefined);
    return;
  }
  const fixture = useSandbox();
  const temp = tempRoot('hm-interop-fixed');
  let binary = '';
  let plugin = '';
  before(async () => {
    [binary, plugin] = await Promise.all([rancherMachineBinary(), pluginExecutable()]);
    fs.writeFileSync(path.join(temp.dir, 'install.sh'), INSTALL_SCRIPT, { mode: 0o600 });
  });

  /** One machine's "pod": its own bin dir (plugin, the guest's ssh), home and store. */
  function pod(instance: string): MachineCli {
    const dir = path.join(temp.dir, instance);
    const binDir = path.join(dir, 'bin');
    installPlugin(plugin, binDir);
    installGuestSsh(binDir, path.join(dir, 'ssh-calls.log'));
    const cli = new MachineCli({
      binary,
      binDir,
      home: path.join(dir, 'home'),
      tmpDir: path.join(dir, 'tmp'),
      env: {},
    });
    cli.freshHome();
    return cli;
  }

  const createArgs = (instance: string, extra: Record<string, string>): string[] =>
    rancherCreateArgs({
      instance,
      clusterName: 'fixed',
      installScript: path.join(temp.dir, 'install.sh'),
      config: {
        ...poolConfig(fixture.sandbox.seeds),
        'kubeconfig-content': fixture.sandbox.kubeconfigs.harvesterViaRancher,
        ...extra,
      },
    });

  const claims = async (): Promise<KubeObject[]> =>
    (
      await fixture.sandbox.harvester.admin.list<KubeObject>(Resources.configMap, {
        namespace: NS,
        labelSelector: LABEL_ADDRESS_CLAIM,
      })
    ).items.filter((c) => !c.metadata.deletionTimestamp);

  const fixed = ['a', 'b', 'c'].map((s) => `fixed-pool1-7c9d8b6f5-${s}`);
  const pods = new Map<string, MachineCli>();
  const podOf = (instance: string): MachineCli => {
    const cli = pods.get(instance);
    assert.ok(cli, `no pod for ${instance}`);
    return cli;
  };
  const times: Record<string, number> = {};

  it('creates the three at once, each job on its own: three distinct addresses of the range', async () => {
    const flags = {
      'network-name': `${NS}/${SEED_STATIC_NETWORK}`,
      'ip-pool-info': JSON.stringify({
        network: `${NS}/${SEED_STATIC_NETWORK}`,
        range: RANGE,
        prefix: 24,
        gateway: SEED_STATIC_SUBNET.gateway,
        dns: [SEED_STATIC_SUBNET.dns],
      }),
      'vm-labels': 'app=fixed-web',
    };
    const started = Date.now();
    const runs = await Promise.all(
      fixed.map((instance) => {
        const cli = pod(instance);
        pods.set(instance, cli);
        return cli.expect(createArgs(instance, flags), { timeoutMs: 180_000 });
      }),
    );
    times['fixed'] = Date.now() - started;
    const addresses = fixed.map((instance) =>
      String(readHostDocument(pods.get(instance)?.storePath ?? '', instance).Driver.IPAddress),
    );
    assert.equal(new Set(addresses).size, 3, `distinct: ${addresses.join(', ')}`);
    assert.deepEqual(addresses.slice().sort(), ['192.168.100.60', '192.168.100.61', '192.168.100.62']);
    for (const [i, run] of runs.entries()) {
      assert.match(
        run.stdout,
        new RegExp(`\\(${fixed[i] ?? ''}\\) Get machine ip: ${addresses[i]?.replaceAll('.', '\\.') ?? ''}`),
      );
      assert.doesNotMatch(
        run.stdout,
        /Waiting for node get ip/,
        'the address is known: no wait for the guest agent',
      );
    }
    for (const [i, instance] of fixed.entries()) {
      const cli = pods.get(instance);
      assert.ok(cli);
      assert.equal(own((await cli.expect(['ip', instance])).stdout), `${addresses[i] ?? ''}\n`);
      const vm = await fixture.sandbox.harvester.admin.get<KubeObject>(Resources.virtualMachine, {
        namespace: NS,
        name: instance,
      });
      assert.equal(vm.metadata.labels?.['app'], 'fixed-web');
    }
    assert.equal((await claims()).length, 3);
  });

  it('creates three without a pool at once, for the comparison of create times', async () => {
    const started = Date.now();
    await Promise.all(
      ['a', 'b', 'c'].map((s) => {
        const instance = `dhcp-pool1-7c9d8b6f5-${s}`;
        const cli = pod(instance);
        pods.set(instance, cli);
        return cli.expect(createArgs(instance, {}), { timeoutMs: 180_000 });
      }),
    );
    times['dhcp'] = Date.now() - started;
    console.log(
      `create of 3 machines at once through rancher-machine: fixed addresses ${((times['fixed'] ?? 0) / 1000).toFixed(1)} s, guest agent (DHCP) ${((times['dhcp'] ?? 0) / 1000).toFixed(1)} s`,
    );
    await Promise.all(
      ['a', 'b', 'c'].map((s) => {
        const instance = `dhcp-pool1-7c9d8b6f5-${s}`;
        return podOf(instance).expect(['rm', '-y', instance]);
      }),
    );
  });

  it('keeps each address through stop, start and restart', async () => {
    await Promise.all(
      fixed.map(async (instance) => {
        const cli = pods.get(instance);
        assert.ok(cli);
        const address = own((await cli.expect(['ip', instance])).stdout);
        await cli.expect(['stop', instance]);
        assert.equal(own((await cli.expect(['status', instance])).stdout), 'Stopped\n');
        const start = await cli.expect(['start', instance]);
        assert.match(start.stdout, /Waiting for SSH to be available/);
        assert.equal(own((await cli.expect(['ip', instance])).stdout), address);
        await cli.expect(['restart', instance]);
        assert.equal(own((await cli.expect(['ip', instance])).stdout), address);
        // The new instance's guest configures the same address from its network data.
        await eventually(`the guest of ${instance} to report ${address.trim()} again`, async () => {
          const vmi = await fixture.sandbox.harvester.admin.get<
            KubeObject & { status?: { interfaces?: Array<{ ipAddress?: string }> } }
          >(Resources.virtualMachineInstance, { namespace: NS, name: instance });
          return `${vmi.status?.interfaces?.[0]?.ipAddress ?? ''}\n` === address;
        });
      }),
    );
    assert.equal((await claims()).length, 3, 'still held');
  });

  it('frees them on rm', async () => {
    await Promise.all(fixed.map((instance) => podOf(instance).expect(['rm', '-y', instance])));
    assert.deepEqual(await claims(), []);
  });
});
