import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newGoDriverConfig, type GoDriverConfig } from '../config/go-config.js';
import { hostDeviceInfoProblems, hostDeviceNameProblems, parseHostDeviceInfo } from './host-devices.js';
import { planRemoval } from '../removal-plan.js';
import { pvc, pvcVolume, vmWith } from '../testing/fixtures.js';
import { buildVirtualMachine, type VmBuildContext } from '../vm-spec.js';

const T4 = 'nvidia.com/TU104GL_TESLA_T4';

function config(overrides: Partial<GoDriverConfig> = {}): GoDriverConfig {
  return {
    ...newGoDriverConfig('gpu-pool1-7f8d9c5b6-x2v9q', '/store'),
    VMNamespace: 'default',
    ClusterName: 'gpu',
    CPU: 2,
    MemorySize: '4Gi',
    DiskSize: '40',
    ImageName: 'image-abc12',
    NetworkName: 'default/vlan1',
    SSHUser: 'ubuntu',
    ...overrides,
  };
}

const context = (): VmBuildContext => ({
  random: () => 'b7k2m',
  imageStorageClass: () => 'longhorn-image-abc12',
  sshPublicKey: 'ssh-ed25519 AAAA machine',
});

describe('--harvester-host-device-info parsing', () => {
  it('reads name and deviceName with Go zero values, ignoring keys it does not know', () => {
    const parsed = parseHostDeviceInfo(
      `{"hostDevices":[{"name":"hostdevice-1","deviceName":"${T4}","tag":"gpu"},{"name":"usb"}]}`,
    );
    assert.deepEqual(parsed, {
      value: {
        hostDevices: [
          { name: 'hostdevice-1', deviceName: T4 },
          { name: 'usb', deviceName: '' },
        ],
      },
      problems: [],
    });
  });

  it('refuses a missing list, naming the keys it found (the Go proposal\'s usage text says "hostDeviceRequests")', () => {
    const { problems } = parseHostDeviceInfo(
      '{"hostDeviceRequests":[{"name":"qat","deviceName":"intel.com/qat"}]}',
    );
    assert.equal(problems.length, 1);
    assert.match(
      problems[0] ?? '',
      /has no "hostDevices" list \(it has "hostDeviceRequests"\); expected \{"hostDevices"/,
    );
  });

  it('refuses what is not JSON, not an object, not a list or has wrongly typed fields', () => {
    assert.match(parseHostDeviceInfo('{"hostDevices":[').problems[0] ?? '', /JSON/);
    assert.match(parseHostDeviceInfo('[1]').problems[0] ?? '', /must be a JSON object/);
    assert.deepEqual(parseHostDeviceInfo('{"hostDevices":{}}').problems, ['"hostDevices" must be a list']);
    assert.deepEqual(parseHostDeviceInfo('{"hostDevices":[7,{"name":1}]}').problems, [
      'hostDevices[0] must be an object',
      'hostDevices[1].name must be a string',
    ]);
  });
});

describe('--harvester-host-device-info checks', () => {
  const problems = (devices: Array<{ name: string; deviceName: string }>, vgpu: string[] = []): string[] =>
    hostDeviceInfoProblems(
      { hostDevices: devices },
      { vGPURequests: vgpu.map((name) => ({ name, deviceName: 'nvidia.com/GRID_A100-1B' })) },
    );

  it('accepts PCI and USB resource names as the pcidevices controller makes them', () => {
    assert.deepEqual(
      problems([
        { name: 'hostdevice-1', deviceName: T4 },
        { name: 'hostdevice-2', deviceName: 'intel.com/0d58' },
        { name: 'node-1-0951-1666-001002', deviceName: 'kubevirt.io/node-1-0951-1666-001002' },
      ]),
      [],
    );
  });

  it('needs a unique name, also across the vGPUs (both become host devices of the VM)', () => {
    assert.deepEqual(
      problems(
        [
          { name: '', deviceName: T4 },
          { name: 'a', deviceName: T4 },
          { name: 'a', deviceName: T4 },
          { name: 'gpu1', deviceName: T4 },
        ],
        ['gpu1'],
      ),
      [
        'hostDevices[0].name is required (unique within the VM, e.g. hostdevice-1)',
        'hostDevices[2].name "a" is used twice: both devices would get the libvirt alias ua-hostdevice-a, and libvirt refuses such a VM',
        'hostDevices[3].name "gpu1" is already the name of a vGPU (--harvester-vgpu-info)',
      ],
    );
  });

  it('needs a device resource name: "<domain>/<name>", not a Kubernetes one, not a PCI address', () => {
    const bad = problems([
      { name: 'a', deviceName: '' },
      { name: 'b', deviceName: '0000:3b:00.0' },
      { name: 'c', deviceName: 'nvidia.com/' },
      { name: 'd', deviceName: 'NVIDIA.com/T4' },
      { name: 'e', deviceName: 'kubernetes.io/gpu' },
      { name: 'f', deviceName: `nvidia.com/${'X'.repeat(64)}` },
    ]);
    assert.equal(bad.length, 6, bad.join('\n'));
    assert.match(bad[0] ?? '', /hostDevices\[0\]\.deviceName is required/);
    assert.match(bad[1] ?? '', /hostDevices\[1\]\.deviceName "0000:3b:00.0" must be a device resource name/);
    assert.match(bad[4] ?? '', /kubernetes\.io\/ is reserved/);
  });
});

describe('host-device names libvirt would refuse', () => {
  const named = (...names: string[]) => ({
    hostDevices: names.map((name) => ({ name, deviceName: 'nvidia.com/TU104GL_TESLA_T4' })),
  });
  it('refuses "/", ".", a space and other characters before Harvester v1.8.0, naming the field', () => {
    const problems = hostDeviceNameProblems(
      named('ok_name-1', 'a/b', 'node.example.com-0000af000', 'a b'),
      'v1.7.1',
    );
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(
      problems[0] ?? '',
      /^hostDevices\[1\]\.name "a\/b" holds "\/": Harvester v1\.7\.1 passes it to libvirt/,
    );
    assert.match(problems[1] ?? '', /^hostDevices\[2\]\.name "node\.example\.com-0000af000" holds "\."/);
    assert.match(problems[2] ?? '', /^hostDevices\[3\]\.name "a b" holds a space/);
    // A version that is no release (or a pre-release of v1.8.0) is taken as one without the encoding.
    assert.equal(hostDeviceNameProblems(named('a.b'), 'v1.8.0-rc3').length, 1);
    assert.equal(hostDeviceNameProblems(named('a.b'), undefined).length, 1);
  });
  it('accepts them from v1.8.0 on (its VMI mutator encodes them), and any length (neither KubeVirt nor libvirt limits it)', () => {
    assert.deepEqual(hostDeviceNameProblems(named('a/b', 'a.b', 'a b'), 'v1.8.0'), []);
    assert.deepEqual(hostDeviceNameProblems(named('a/b'), 'v1.9.2'), []);
    assert.deepEqual(hostDeviceNameProblems(named('x'.repeat(200)), 'v1.7.1'), []);
  });
  it('quotes a long name cut to 64 characters', () => {
    const [p] = hostDeviceNameProblems(named(`${'x'.repeat(100)}.`), 'v1.7.1');
    assert.ok(p && p.includes(`"${'x'.repeat(64)}…"`), p);
  });
});

describe('the VM with host devices', () => {
  it('gets one hostDevices entry per device, after the vGPUs, and the same affinity as without', () => {
    const withDevices = buildVirtualMachine(
      config({
        VGPUInfo: { vGPURequests: [{ name: 'gpu1', deviceName: 'nvidia.com/GRID_A100-1B' }] },
        HostDeviceInfo: {
          hostDevices: [
            { name: 'hostdevice-1', deviceName: T4 },
            { name: 'hostdevice-2', deviceName: T4 },
          ],
        },
      }),
      context(),
    ).vm;
    assert.deepEqual(withDevices.spec.template.spec.domain.devices.hostDevices, [
      { name: 'gpu1', deviceName: 'nvidia.com/GRID_A100-1B' },
      { name: 'hostdevice-1', deviceName: T4 },
      { name: 'hostdevice-2', deviceName: T4 },
    ]);
    const without = buildVirtualMachine(config(), context()).vm;
    assert.equal(without.spec.template.spec.domain.devices.hostDevices, undefined);
    // Neither Harvester's VM form nor Rancher's pool form adds node affinity: the scheduler
    // finds the nodes by the resource.
    assert.deepEqual(withDevices.spec.template.spec.affinity, without.spec.template.spec.affinity);
    const affinity = buildVirtualMachine(
      config({
        VMAffinity: '{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[]}}',
        HostDeviceInfo: { hostDevices: [{ name: 'hostdevice-1', deviceName: T4 }] },
      }),
      context(),
    ).vm.spec.template.spec.affinity;
    assert.deepEqual(affinity, { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } });
  });

  it('with an empty list has no hostDevices at all', () => {
    const { vm } = buildVirtualMachine(config({ HostDeviceInfo: { hostDevices: [] } }), context());
    assert.equal(vm.spec.template.spec.domain.devices.hostDevices, undefined);
  });
});

describe('host devices and removal', () => {
  it('are not volumes: a VM with host devices has the same removal plan, plain and whole-cluster', () => {
    const volumes = [pvcVolume('disk-0', 'm1-disk-0-aaaaa'), pvcVolume('pvc-guest-1', 'pvc-guest-1', true)];
    const plain = vmWith('m1', 'default', volumes);
    const withDevices = vmWith('m1', 'default', volumes);
    withDevices.spec.template.spec.domain.devices.hostDevices = [
      { name: 'hostdevice-1', deviceName: T4 },
      // A device named like a volume or a PVC changes nothing either.
      { name: 'm1-disk-0-aaaaa', deviceName: 'kubevirt.io/node-1-0951-1666-001002' },
    ];
    const pvcs = [
      pvc('m1-disk-0-aaaaa', 'default'),
      pvc('pvc-guest-1', 'default', { 'guestcluster.harvesterhci.io/name': 'c1' }),
    ];
    for (const removeAll of [false, true]) {
      const inputs = { pvcs: pvcs, removeAll, clusterName: 'c1' };
      assert.deepEqual(
        planRemoval({ ...inputs, vm: withDevices, vms: [withDevices] }),
        planRemoval({ ...inputs, vm: plain, vms: [plain] }),
      );
    }
  });
});
