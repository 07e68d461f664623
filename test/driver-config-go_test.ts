// A config.json from either driver loads in the other, checked with Go's own encoding/json:
// test/go-config-compat reads our Driver object as the Go driver of today and as one with
// docker-machine-driver-harvester#96 (HostDeviceInfo), and writes back what each keeps.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { configFromFlags, newDriverConfig } from '../src/driver/config/index.js';
import { defaultFlagValues } from '../src/driver/config/flags.js';
import { parseSavedConfig, savedConfigFor, serializeSavedConfig } from '../src/driver/config/go-json.js';
import { rancherKubeconfig } from '../src/kube/testing/kubeconfig.js';
import { buildGoHelper, goSkipReason } from './support/go-helper.js';

const T4 = 'nvidia.com/TU104GL_TESLA_T4';

/** Our config.json Driver object for a machine with a vGPU and two host devices. */
function ours(): string {
  const values = defaultFlagValues();
  values.set('harvester-kubeconfig-content', rancherKubeconfig());
  values.set('harvester-image-name', 'default/image-abc12');
  values.set('harvester-disk-size', 40);
  values.set('harvester-network-name', 'default/vlan1');
  values.set(
    'harvester-vgpu-info',
    '{"vGPURequests":[{"name":"gpu1","deviceName":"nvidia.com/GRID_A100-1B"}]}',
  );
  values.set(
    'harvester-host-device-info',
    JSON.stringify({
      hostDevices: [
        { name: 'hostdevice-1', deviceName: T4 },
        { name: 'hostdevice-2', deviceName: 'kubevirt.io/node-1-0951-1666-001002' },
      ],
    }),
  );
  const cfg = configFromFlags(values, newDriverConfig('gpu-pool1-abc12-x2v9q', '/store'));
  return serializeSavedConfig(savedConfigFor(cfg));
}

function without(json: string, ...keys: string[]): Record<string, unknown> {
  const obj = JSON.parse(json) as Record<string, unknown>;
  for (const k of keys) delete obj[k];
  return obj;
}

describe('config.json between the Go driver and this one', { skip: goSkipReason() }, () => {
  let program = '';
  before(() => {
    program = buildGoHelper('go-config-compat');
  });
  const goReads = (json: string): { today: Record<string, unknown>; pr96: Record<string, unknown> } => {
    const run = spawnSync(program, { input: json, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    return JSON.parse(run.stdout) as { today: Record<string, unknown>; pr96: Record<string, unknown> };
  };

  it("ours loads in today's Go driver, which keeps every field but HostDeviceInfo and ours, in our order", () => {
    const json = ours();
    const { today } = goReads(json);
    const expected = without(json, 'HostDeviceInfo', 'HarvesterMachine');
    assert.deepEqual(today, expected);
    assert.deepEqual(Object.keys(today), Object.keys(expected), 'json.Marshal order');
  });

  it('ours loads in a Go driver with #96 as the same devices, and its config.json loads here', () => {
    const json = ours();
    const { pr96 } = goReads(json);
    const expected = without(json, 'HarvesterMachine');
    assert.deepEqual(pr96, expected);
    assert.deepEqual(Object.keys(pr96), Object.keys(expected), 'HostDeviceInfo where json.Marshal puts it');

    const back = parseSavedConfig(JSON.stringify(pr96));
    assert.deepEqual(back.driver.HostDeviceInfo, parseSavedConfig(json).driver.HostDeviceInfo);
    assert.deepEqual(without(serializeSavedConfig(back), 'HarvesterMachine'), pr96);
  });

  it('keeps what #96 knows and we do not (a device tag) while the devices are unchanged', () => {
    const withTag = ours().replace(`"deviceName":"${T4}"`, `"deviceName":"${T4}","tag":"gpu"`);
    const { pr96 } = goReads(withTag);
    const devices = (pr96.HostDeviceInfo as { hostDevices: Array<Record<string, unknown>> }).hostDevices;
    assert.equal(devices[0]?.tag, 'gpu');
    const saved = serializeSavedConfig(parseSavedConfig(JSON.stringify(pr96)));
    assert.deepEqual(goReads(saved).pr96, pr96, 'saved back unchanged, tag included');
  });

  it('ours with the storage options: today’s Go driver drops them, one with them reads each, in our order', () => {
    const values = defaultFlagValues();
    values.set('harvester-kubeconfig-content', rancherKubeconfig());
    values.set('harvester-network-name', 'default/vlan1');
    values.set(
      'harvester-disk-info',
      JSON.stringify({
        disks: [
          {
            imageName: 'default/image-abc12',
            size: 40,
            cache: 'none',
            io: 'native',
            dedicatedIOThread: true,
          },
          { storageClassName: 'longhorn', size: 5 },
        ],
      }),
    );
    values.set('harvester-block-multi-queue', true);
    values.set('harvester-io-threads-policy', 'supplementalPool');
    values.set('harvester-io-thread-count', '4294967295');
    const json = serializeSavedConfig(
      savedConfigFor(configFromFlags(values, newDriverConfig('io-pool1-abc12-x2v9q', '/store'))),
    );
    const { today, storage } = goReads(json) as ReturnType<typeof goReads> & {
      storage: Record<string, unknown>;
    };
    const expected = without(json, 'HarvesterMachine');
    assert.deepEqual(storage, expected);
    assert.deepEqual(Object.keys(storage), Object.keys(expected), 'json.Marshal order');
    assert.equal(storage.IOThreadCount, 4294967295, 'a uint32 holds the largest count');

    assert.deepEqual(
      Object.keys(today),
      Object.keys(without(json, 'HarvesterMachine', 'BlockMultiQueue', 'IOThreadsPolicy', 'IOThreadCount')),
    );
    const disks = (today.DiskInfo as { disks: Array<Record<string, unknown>> }).disks;
    assert.deepEqual(Object.keys(disks[0] ?? {}), [
      'imageName',
      'storageClassName',
      'size',
      'bootOrder',
      'bus',
      'type',
      'hotPlugAble',
    ]);
    // And what such a Go driver writes loads here with the same options.
    assert.deepEqual(
      parseSavedConfig(JSON.stringify(storage)).driver.DiskInfo,
      parseSavedConfig(json).driver.DiskInfo,
    );
  });

  it("today's Go driver writes a config.json that loads here with no devices", () => {
    const { today } = goReads('{"MachineName":"m1","SSHPort":22,"CPU":2}');
    const loaded = parseSavedConfig(JSON.stringify(today));
    assert.equal(loaded.driver.HostDeviceInfo, null);
    assert.equal(loaded.driver.CPU, 2);
    assert.equal(loaded.unknownFields.size, 0);
  });
});
