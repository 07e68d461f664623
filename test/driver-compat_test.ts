// Drop-in compatibility and robustness of the driver on the sandbox: a config.json written
// by the Go driver is loaded and its machine removed; a create that died half-way is
// finished by running it again; bad input is refused before anything is created; a VM
// stuck Terminating ends the wait with an error that names what holds it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../src/driver/config/index.js';
import { isKubeError } from '../src/kube/errors.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import type { Vm } from '../src/harvester-access/harvester-api.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { loadMachine, machineFlags, newMachine, tempStore } from './support/machines.js';
import { HarvesterDriver } from '../src/driver/harvester-driver.js';
import { vmPvcNames, waitPvcGone } from './support/volumes.js';
import { goDriverConfig } from './support/go-driver-config.js';

const fixture = useSandbox();
const store = tempStore();
const ns = 'default';

/** rancher-machine hands SetConfigRaw the Driver object still indented from config.json. */
function goConfigJson(name: string, kubeconfig: string, clusterName: string, ip: string): string {
  const driver = goDriverConfig({
    name,
    store: '/home/machine/.docker/machine',
    kubeconfig,
    ip,
    clusterName,
    namespace: ns,
    image: 'default/image-ubuntu',
    network: 'default/vlan1',
  });
  return JSON.stringify(driver, null, 4).replace(/\n/g, '\n    ');
}

describe('drop-in compatibility', () => {
  it('loads a config.json written by the Go driver, removes its machine and saves back every field', async () => {
    const { sandbox } = fixture;
    const name = 'gocfg-pool1-58c4d-x7k2p';
    const created = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterViaRancher,
      storePath: store,
      clusterName: 'gocfg',
    });
    await created.driver.create();
    created.driver.close();
    const boot = await vmPvcNames(sandbox.harvester.admin, ns, name);

    const raw = goConfigJson(
      name,
      sandbox.kubeconfigs.harvesterViaRancher,
      'gocfg',
      created.driver.config.IPAddress,
    );
    const { driver } = loadMachine(Buffer.from(raw));
    const roundTrip = JSON.parse(Buffer.from(driver.getConfigRaw()).toString('utf8')) as Record<
      string,
      unknown
    >;
    const original = JSON.parse(raw) as Record<string, unknown>;
    for (const [key, value] of Object.entries(original))
      assert.deepEqual(roundTrip[key], value, `field ${key} saved back`);
    assert.deepEqual(
      Object.keys(roundTrip).slice(0, Object.keys(original).length),
      Object.keys(original),
      'Go field order',
    );

    await driver.remove();
    assert.equal(
      await sandbox.harvester.admin.find(Resources.virtualMachine, { namespace: ns, name }),
      undefined,
    );
    for (const pvc of boot) await waitPvcGone(sandbox.harvester.admin, ns, pvc);
    driver.close();
  });
});

describe("the Go driver's own inputs", () => {
  it('creates and runs the VM of its vGPU test input (names left empty), each device named after itself', async () => {
    const { sandbox } = fixture;
    const name = 'vgpu-pool1-6c5d4-v1g2p';
    const { driver } = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'vgpu',
      flags: {
        'harvester-vgpu-info':
          '{"vGPURequests":[{"name":"","deviceName":"nvidia.com/NVIDIA_A2-2Q"},{"name":"","deviceName":"nvidia.com/NVIDIA_A2-1Q"}]}',
      },
    });
    await driver.preCreateCheck();
    await driver.create();
    const vm = await sandbox.harvester.admin.get<Vm>(Resources.virtualMachine, { namespace: ns, name });
    assert.deepEqual(vm.spec.template.spec.domain.devices.hostDevices, [
      { name: 'nvidia-com-NVIDIA_A2-2Q', deviceName: 'nvidia.com/NVIDIA_A2-2Q' },
      { name: 'nvidia-com-NVIDIA_A2-1Q', deviceName: 'nvidia.com/NVIDIA_A2-1Q' },
    ]);
    // config.json keeps the requests as given, as the Go driver saves them.
    assert.deepEqual(
      driver.config.VGPUInfo?.vGPURequests.map((r) => r.name),
      ['', ''],
    );
    await driver.remove();
    driver.close();
  });
});

describe('idempotency', () => {
  it('finishes a create that died waiting for the IP, without a second VM or volume', async () => {
    const { sandbox } = fixture;
    const name = 'halfdone-pool1-2a9b3-q1w2e';
    sandbox.standIns.configure({ noIp: (vm) => vm.name === name });
    try {
      const first = newMachine({
        name,
        kubeconfig: sandbox.kubeconfigs.harvesterDirect,
        storePath: store,
        clusterName: 'halfdone',
        flags: { 'harvester-ip-timeout': 2 },
        progressIntervalMs: 500,
      });
      const err = await first.driver.create().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(isKubeError(err, 'Timeout'), String(err));
      assert.match(
        err.message,
        /timed out after 2 s waiting for VM default\/halfdone-pool1-2a9b3-q1w2e to report an IP address/,
      );
      assert.match(
        err.message,
        /last seen: VM instance Running; 1 interface reported, none with a usable address; qemu-guest-agent not connected/,
      );
      // The job log says what the wait is stuck on while it waits, with the time waited.
      const info = first.log.lines.filter((l) => l.level === 'info').map((l) => l.line);
      const fromIpWait = info.slice(info.indexOf('Waiting for node get ip'));
      assert.match(
        fromIpWait[1] ?? '',
        /^VM instance Running; 1 interface reported, none with a usable address; qemu-guest-agent not connected \(it reports the addresses\) \(after \d+ ms\)$/,
      );
      assert.ok(
        fromIpWait.some((l) =>
          /^Still waiting for VM default\/halfdone-pool1-2a9b3-q1w2e to report an IP address after \d+ (ms|s): VM instance Running; 1 interface reported, none with a usable address; qemu-guest-agent not connected/.test(
            l,
          ),
        ),
        fromIpWait.join('\n'),
      );
      first.driver.close();
    } finally {
      sandbox.standIns.configure({ noIp: () => false });
    }
    const vmBefore = await sandbox.harvester.admin.get<Vm>(Resources.virtualMachine, { namespace: ns, name });
    const disksBefore = await vmPvcNames(sandbox.harvester.admin, ns, name);

    const second = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'halfdone',
    });
    await second.driver.preCreateCheck();
    await second.driver.create();
    assert.ok(second.driver.config.IPAddress);
    const vmAfter = await sandbox.harvester.admin.get<Vm>(Resources.virtualMachine, { namespace: ns, name });
    assert.equal(vmAfter.metadata.uid, vmBefore.metadata.uid, 'the same VM');
    assert.deepEqual(await vmPvcNames(sandbox.harvester.admin, ns, name), disksBefore, 'no second boot disk');
    const vms = await sandbox.harvester.admin.list<KubeObject>(Resources.virtualMachine, {
      namespace: ns,
      labelSelector: `harvesterhci.io/vmName=${name}`,
    });
    assert.equal(vms.items.length, 1);
    await second.driver.remove();
    second.driver.close();
  });

  it('refuses to take over a VM of the same name that another machine owns', async () => {
    const { sandbox } = fixture;
    const name = 'taken-pool1-9f8e7-zz9y8';
    const owner = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'owner',
    });
    await owner.driver.create();
    const intruder = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'other',
    });
    await assert.rejects(
      intruder.driver.preCreateCheck(),
      /machine taken-pool1-9f8e7-zz9y8 already exists in namespace default/,
    );
    await owner.driver.remove();
    owner.driver.close();
    intruder.driver.close();
  });
});

describe('bad input', () => {
  const cases: Array<[string, Record<string, string | number | boolean>, RegExp]> = [
    ['disk-info is not JSON', { 'harvester-disk-info': '{"disks": [' }, /--harvester-disk-info: /],
    ['network-info is not JSON', { 'harvester-network-info': 'not json' }, /--harvester-network-info: /],
    ['vgpu-info is not JSON', { 'harvester-vgpu-info': '[1,' }, /--harvester-vgpu-info: /],
    ['affinity is not JSON', { 'harvester-vm-affinity': '{affinity' }, /--harvester-vm-affinity: /],
    ['negative disk size', { 'harvester-disk-size': -5 }, /--harvester-disk-size: /],
    ['unknown disk bus', { 'harvester-disk-bus': 'floppy' }, /--harvester-disk-bus: /],
    [
      'invalid network data',
      { 'harvester-network-data': 'version: 1\nconfig: 7' },
      /--harvester-network-data: /,
    ],
    [
      'garbage kubeconfig',
      { 'harvester-kubeconfig-content': ':::not yaml:::' },
      /--harvester-kubeconfig-content: /,
    ],
    [
      'truncated kubeconfig',
      { 'harvester-kubeconfig-content': 'apiVersion: v1\nclusters:\n- cluster:\n    server: https://' },
      /--harvester-kubeconfig-content: /,
    ],
    [
      'kubeconfig without a current context',
      {
        'harvester-kubeconfig-content':
          'apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n',
      },
      /--harvester-kubeconfig-content: .*context/,
    ],
    ['secure boot without EFI', { 'harvester-enable-secure-boot': true }, /--harvester-enable-secure-boot: /],
    [
      'key pair without a private key',
      { 'harvester-key-pair-name': 'sandbox-key' },
      /--harvester-ssh-private-key-path|--harvester-key-pair-name/,
    ],
  ];
  for (const [what, flags, expected] of cases) {
    it(`refuses ${what}, naming the flag, and creates nothing`, async () => {
      const { sandbox } = fixture;
      const before = await sandbox.harvester.admin.list<KubeObject>(Resources.virtualMachine, {
        namespace: ns,
      });
      const driver = new HarvesterDriver();
      driver.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: 'bad-input-1', StorePath: store })));
      const values = machineFlags({
        name: 'bad-input-1',
        kubeconfig: sandbox.kubeconfigs.harvesterDirect,
        storePath: store,
      });
      for (const [k, v] of Object.entries(flags)) values.set(k, v);
      const err = (() => {
        try {
          driver.setConfigFromFlags(values);
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
      assert.match(err.message, expected);
      assert.doesNotMatch(err.message, /BEGIN|token:|client-key/);
      const after = await sandbox.harvester.admin.list<KubeObject>(Resources.virtualMachine, {
        namespace: ns,
      });
      assert.equal(after.items.length, before.items.length);
    });
  }

  it('names every missing object in the pre-create check and creates nothing', async () => {
    const { sandbox } = fixture;
    const { driver } = newMachine({
      name: 'missing-things-1',
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      flags: {
        'harvester-image-name': 'default/no-such-image',
        'harvester-network-name': 'default/no-such-net',
      },
    });
    await assert.rejects(driver.preCreateCheck(), (err: Error) => {
      assert.match(err.message, /image default\/no-such-image \(--harvester-image-name\) not found/);
      assert.match(err.message, /network default\/no-such-net \(--harvester-network-name\) not found/);
      return true;
    });
    assert.equal(
      await sandbox.harvester.admin.find(Resources.virtualMachine, {
        namespace: ns,
        name: 'missing-things-1',
      }),
      undefined,
    );
    driver.close();
  });
});

describe('stuck removal', () => {
  it('gives up at the deadline naming the finalizer that holds the VM, and a rerun finishes once it is released', async () => {
    const { sandbox } = fixture;
    const name = 'stuck-pool1-1b2c3-d4e5f';
    const m = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'stuck',
      flags: { 'harvester-remove-timeout': 3 },
    });
    await m.driver.create();
    await sandbox.faults.holdRemoval(ns, name);
    try {
      const err = await m.driver.remove().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(isKubeError(err, 'Timeout'), String(err));
      assert.match(
        err.message,
        /timed out after 3 s waiting for VM default\/stuck-pool1-1b2c3-d4e5f to be removed/,
      );
      assert.match(
        err.message,
        /held by finalizers? (.*, )?wrangler\.cattle\.io\/VMController\.CleanupPVCAndSnapshot \(Harvester's VM controller has not finished deleting its volumes/,
      );
    } finally {
      await sandbox.faults.releaseRemoval(ns, name);
    }
    // Rancher reruns the rm job; the garbage collector's backoff can take a few seconds more.
    m.driver.config.HarvesterMachine.RemoveTimeoutSeconds = 60;
    await m.driver.remove();
    assert.equal(
      await sandbox.harvester.admin.find(Resources.virtualMachine, { namespace: ns, name }),
      undefined,
    );
    m.driver.close();
  });
});
