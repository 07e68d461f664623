// --harvester-host-device-info from the flag to config.json: parsed, checked, saved where
// the Go proposal saves it, and read back from a config.json of either driver.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rancherKubeconfig } from '../../kube/testing/kubeconfig.js';
import { ConfigError, configFromFlags, newDriverConfig, type DriverConfig } from '../config/index.js';
import { createFlags, defaultFlagValues } from '../config/flags.js';
import { parseSavedConfig, savedConfigFor, serializeSavedConfig } from '../config/go-json.js';

const T4 = 'nvidia.com/TU104GL_TESLA_T4';
const INFO = `{"hostDevices":[{"name":"hostdevice-1","deviceName":"${T4}"}]}`;

function build(hostDeviceInfo: string): DriverConfig {
  const values = defaultFlagValues();
  values.set('harvester-kubeconfig-content', rancherKubeconfig());
  values.set('harvester-image-name', 'default/image-abc12');
  values.set('harvester-disk-size', 40);
  values.set('harvester-network-name', 'default/vlan1');
  values.set('harvester-host-device-info', hostDeviceInfo);
  return configFromFlags(values, newDriverConfig('gpu-pool1-abc12-x2v9q', '/store'));
}

describe('--harvester-host-device-info', () => {
  it('is a create flag with its variable, as GetCreateFlags hands it to Rancher', () => {
    const flag = createFlags().find((f) => f.name === 'harvester-host-device-info');
    assert.equal(flag?.kind, 'string');
    assert.equal(flag?.envVar, 'HARVESTER_HOST_DEVICE_INFO');
    assert.equal(flag?.kind === 'string' ? flag.value : undefined, '');
    assert.match(flag?.usage ?? '', /\{"hostDevices":\[\{"name":"hostdevice-1","deviceName":/);
  });

  it('takes plain JSON and base64 alike', () => {
    const expected = { hostDevices: [{ name: 'hostdevice-1', deviceName: T4 }] };
    assert.deepEqual(build(INFO).HostDeviceInfo, expected);
    assert.deepEqual(build(Buffer.from(INFO).toString('base64')).HostDeviceInfo, expected);
    assert.equal(build('').HostDeviceInfo, null);
  });

  it('refuses bad values before anything is created, naming the flag and the entry', () => {
    const refused = (text: string): string => {
      try {
        build(text);
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        return err.message;
      }
      assert.fail(`accepted ${text}`);
    };
    assert.match(refused('{"hostDevices":'), /--harvester-host-device-info: /);
    assert.match(
      refused('{"hostDevices":[{"name":"a","deviceName":"0000:3b:00.0"}]}'),
      /--harvester-host-device-info: hostDevices\[0\]\.deviceName "0000:3b:00\.0" must be a device resource name/,
    );
    assert.match(
      refused('{"hostDevices":[{"deviceName":"nvidia.com/T4"}]}'),
      /--harvester-host-device-info: hostDevices\[0\]\.name is required/,
    );
  });

  it('is saved as HostDeviceInfo right after VGPUInfo, and read back', () => {
    const json = serializeSavedConfig(savedConfigFor(build(INFO)));
    assert.ok(
      json.includes(
        `"VGPUInfo":null,"HostDeviceInfo":{"hostDevices":[{"name":"hostdevice-1","deviceName":"${T4}"}]},"CPUPinning":false`,
      ),
      json,
    );
    assert.deepEqual(parseSavedConfig(json).driver.HostDeviceInfo, build(INFO).HostDeviceInfo);
  });

  it("leaves the key out while there are no devices: the config.json is then the Go driver's", () => {
    const json = serializeSavedConfig(savedConfigFor(build('')));
    assert.ok(!json.includes('HostDeviceInfo'), json);
    assert.ok(json.includes('"VGPUInfo":null,"CPUPinning":false'), json);
    const fromNull = parseSavedConfig('{"MachineName":"m","HostDeviceInfo":null}');
    assert.equal(fromNull.driver.HostDeviceInfo, null);
    assert.ok(!serializeSavedConfig(fromNull).includes('HostDeviceInfo'));
  });

  it("loads a config.json without the key (today's Go driver) as no devices, and one with a null list", () => {
    assert.equal(
      parseSavedConfig('{"MachineName":"m","VGPUInfo":null,"CPUPinning":false}').driver.HostDeviceInfo,
      null,
    );
    assert.deepEqual(parseSavedConfig('{"HostDeviceInfo":{"hostDevices":null}}').driver.HostDeviceInfo, {
      hostDevices: [],
    });
    assert.throws(
      () => parseSavedConfig('{"HostDeviceInfo":[1]}'),
      /HostDeviceInfo must be an object or null/,
    );
  });
});
