import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAKE_TOKEN, FAKE_TOKEN_SECRET, rancherKubeconfig } from '../../kube/testing/kubeconfig.js';
import {
  ConfigError,
  configFromFlags,
  configProblems,
  configWarnings,
  newDriverConfig,
  type DriverConfig,
} from './index.js';
import { defaultFlagValues } from './flags.js';
import type { FlagValue } from '../machine-driver.js';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** A complete, valid set of flag values (legacy single disk and NIC), as rancher-machine sends them. */
function validValues(overrides: Record<string, FlagValue> = {}): Map<string, FlagValue> {
  const values = defaultFlagValues();
  values.set('harvester-kubeconfig-content', b64(rancherKubeconfig()));
  values.set('harvester-cluster-name', 'mycluster');
  values.set('harvester-image-name', 'default/image-abc12');
  values.set('harvester-disk-size', 40);
  values.set('harvester-network-name', 'default/vlan1');
  values.set('harvester-ssh-user', 'ubuntu');
  for (const [k, v] of Object.entries(overrides)) values.set(`harvester-${k}`, v);
  return values;
}

function build(overrides: Record<string, FlagValue> = {}): DriverConfig {
  return configFromFlags(
    validValues(overrides),
    newDriverConfig('mycluster-pool1-7f8d9c5b6-x2v9q', '/store'),
  );
}

function problemsOf(overrides: Record<string, FlagValue>): ConfigError {
  try {
    build(overrides);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected a ConfigError for ${JSON.stringify(overrides)}`);
}

const disk = (d: Record<string, unknown>): string =>
  JSON.stringify({ disks: [{ imageName: 'img', size: 10, ...d }] });
const nic = (n: Record<string, unknown>): string =>
  JSON.stringify({ interfaces: [{ networkName: 'vlan1', ...n }] });
const truncatedKubeconfig = b64(rancherKubeconfig()).slice(0, 101);

// [what, flag overrides, the flag the error must name]
const MALFORMED: Array<[string, Record<string, FlagValue>, string]> = [
  ['kubeconfig: not YAML', { 'kubeconfig-content': 'a: [unclosed' }, 'kubeconfig-content'],
  ['kubeconfig: plain text', { 'kubeconfig-content': 'hello there' }, 'kubeconfig-content'],
  ['kubeconfig: truncated base64', { 'kubeconfig-content': truncatedKubeconfig }, 'kubeconfig-content'],
  [
    'kubeconfig: no current-context',
    { 'kubeconfig-content': rancherKubeconfig({ currentContext: '' }) },
    'kubeconfig-content',
  ],
  [
    'kubeconfig: unknown current-context',
    { 'kubeconfig-content': rancherKubeconfig({ currentContext: 'x' }) },
    'kubeconfig-content',
  ],
  [
    'kubeconfig: bad server URL',
    { 'kubeconfig-content': rancherKubeconfig({ server: 'not a url' }) },
    'kubeconfig-content',
  ],
  [
    'kubeconfig: ftp server',
    { 'kubeconfig-content': rancherKubeconfig({ server: 'ftp://h/x' }) },
    'kubeconfig-content',
  ],
  ['cluster name not a label value', { 'cluster-name': 'My Cluster!' }, 'cluster-name'],
  ['namespace with capitals', { 'vm-namespace': 'Default' }, 'vm-namespace'],
  ['namespace empty', { 'vm-namespace': '' }, 'vm-namespace'],
  ['cpu count zero', { 'cpu-count': 0 }, 'cpu-count'],
  ['cpu count negative', { 'cpu-count': -2 }, 'cpu-count'],
  ['cpu count not a number', { 'cpu-count': 'two' }, 'cpu-count'],
  ['cpu count fractional', { 'cpu-count': 1.5 }, 'cpu-count'],
  ['memory zero', { 'memory-size': 0 }, 'memory-size'],
  ['memory negative', { 'memory-size': -4 }, 'memory-size'],
  ['memory not a number', { 'memory-size': 'lots' }, 'memory-size'],
  ['disk size negative', { 'disk-size': -5 }, 'disk-size'],
  ['disk size missing (legacy)', { 'disk-size': 0 }, 'disk-size'],
  ['disk size not a number', { 'disk-size': '40G' }, 'disk-size'],
  ['disk bus unknown', { 'disk-bus': 'ide' }, 'disk-bus'],
  ['image missing (legacy)', { 'image-name': '' }, 'image-name'],
  ['image with two slashes', { 'image-name': 'a/b/c' }, 'image-name'],
  ['disk-info not JSON', { 'disk-info': '{"disks":[' }, 'disk-info'],
  ['disk-info a list', { 'disk-info': '[]' }, 'disk-info'],
  ['disk-info disks not a list', { 'disk-info': '{"disks":"x"}' }, 'disk-info'],
  ['disk-info without disks', { 'disk-info': '{}' }, 'disk-info'],
  ['disk-info empty', { 'disk-info': '{"disks":[]}' }, 'disk-info'],
  ['disk-info entry not an object', { 'disk-info': '{"disks":[3]}' }, 'disk-info'],
  ['disk-info without image or class', { 'disk-info': '{"disks":[{"size":10}]}' }, 'disk-info'],
  ['disk-info size zero', { 'disk-info': disk({ size: 0 }) }, 'disk-info'],
  ['disk-info size negative', { 'disk-info': disk({ size: -1 }) }, 'disk-info'],
  ['disk-info size a string', { 'disk-info': disk({ size: '10' }) }, 'disk-info'],
  ['disk-info bus unknown', { 'disk-info': disk({ bus: 'ide' }) }, 'disk-info'],
  ['disk-info virtio cd-rom', { 'disk-info': disk({ type: 'cd-rom', bus: 'virtio' }) }, 'disk-info'],
  ['disk-info bootOrder negative', { 'disk-info': disk({ bootOrder: -1 }) }, 'disk-info'],
  [
    'disk-info duplicate bootOrder',
    {
      'disk-info': JSON.stringify({
        disks: [
          { imageName: 'a', size: 1, bootOrder: 1 },
          { imageName: 'b', size: 1, bootOrder: 1 },
        ],
      }),
    },
    'disk-info',
  ],
  ['disk-info hotPlugAble not a bool', { 'disk-info': disk({ hotPlugAble: 'yes' }) }, 'disk-info'],
  ['disk-info image with two slashes', { 'disk-info': disk({ imageName: 'a/b/c' }) }, 'disk-info'],
  ['ssh user not a string', { 'ssh-user': 3 }, 'ssh-user'],
  ['ssh port not a number', { 'ssh-port': 'ssh' }, 'ssh-port'],
  ['network type not a string', { 'network-type': 5 }, 'network-type'],
  ['key pair without private key', { 'key-pair-name': 'mykey' }, 'ssh-private-key-path'],
  ['network name missing (legacy)', { 'network-name': '' }, 'network-name'],
  ['network name with two slashes', { 'network-name': 'a/b/c' }, 'network-name'],
  ['network model unknown', { 'network-model': 'rtl9999' }, 'network-model'],
  ['network-info not JSON', { 'network-info': '{interfaces' }, 'network-info'],
  ['network-info empty', { 'network-info': '{"interfaces":[]}' }, 'network-info'],
  ['network-info without network name', { 'network-info': nic({ networkName: '' }) }, 'network-info'],
  ['network-info bad MAC', { 'network-info': nic({ macAddress: '52:54:00:zz:00:01' }) }, 'network-info'],
  ['network-info bad model', { 'network-info': nic({ model: 'bogus' }) }, 'network-info'],
  ['network-info bad type', { 'network-info': nic({ type: 'sriov' }) }, 'network-info'],
  [
    'network-info masquerade on a Multus network',
    { 'network-info': nic({ type: 'masquerade' }) },
    'network-info',
  ],
  [
    'network-info 8-byte MAC',
    { 'network-info': nic({ macAddress: '02:00:5e:10:00:00:00:01' }) },
    'network-info',
  ],
  ['network-info field of wrong type', { 'network-info': nic({ macAddress: 5 }) }, 'network-info'],
  ['user data not YAML', { 'user-data': 'runcmd: [unclosed' }, 'user-data'],
  ['user data a list', { 'user-data': '- a\n- b\n' }, 'user-data'],
  ['user data base64 of bad YAML', { 'user-data': b64('a: b: c: [') }, 'user-data'],
  ['user data a shell script', { 'user-data': '#!/bin/sh\necho hi\n' }, 'user-data'],
  ['network data not YAML', { 'network-data': 'version: [1' }, 'network-data'],
  ['network data a list', { 'network-data': '- 1\n' }, 'network-data'],
  ['network data without version', { 'network-data': 'config: []\n' }, 'network-data'],
  ['network data version 3', { 'network-data': 'version: 3\n' }, 'network-data'],
  [
    'network data v1 without route',
    {
      'network-data':
        'version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n  - type: static\n    address: 10.0.0.2/24\n- type: nameserver\n  address: [1.1.1.1]\n',
    },
    'network-data',
  ],
  [
    'network data v1 with two gateways',
    {
      'network-data':
        'version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n  - type: static\n    address: 10.0.0.2/24\n    gateway: 10.0.0.1\n' +
        '- type: physical\n  name: eth1\n  subnets:\n  - type: static\n    address: 10.1.0.2/24\n    gateway: 10.1.0.1\n' +
        '- type: nameserver\n  address: [1.1.1.1]\n',
    },
    'network-data',
  ],
  [
    'network data v1 without nameserver',
    {
      'network-data':
        'version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n  - type: static\n    address: 10.0.0.2/24\n    gateway: 10.0.0.1\n',
    },
    'network-data',
  ],
  [
    'network data v1 config not a list',
    { 'network-data': 'network:\n  version: 1\n  config: {}\n' },
    'network-data',
  ],
  ['affinity not JSON', { 'vm-affinity': '{"podAffinity":' }, 'vm-affinity'],
  ['affinity a list', { 'vm-affinity': '[]' }, 'vm-affinity'],
  ['affinity base64 with a list inside', { 'vm-affinity': b64('{"podAffinity":[]}') }, 'vm-affinity'],
  [
    'affinity weight of the wrong type, deep inside',
    {
      'vm-affinity':
        '{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":"high"}]}}',
    },
    'vm-affinity',
  ],
  [
    'affinity weight 0 (the pod would be refused)',
    {
      'vm-affinity':
        '{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":0,"podAffinityTerm":{"topologyKey":"zone"}}]}}',
    },
    'vm-affinity',
  ],
  [
    'affinity term without topologyKey',
    {
      'vm-affinity':
        '{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{}}]}}',
    },
    'vm-affinity',
  ],
  [
    'affinity unknown operator',
    {
      'vm-affinity':
        '{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"Equals","values":["a"]}]}]}}}',
    },
    'vm-affinity',
  ],
  ['secure boot without EFI', { 'enable-secure-boot': true }, 'enable-secure-boot'],
  ['efi not a bool', { 'enable-efi': 'maybe' }, 'enable-efi'],
  ['vgpu-info not JSON', { 'vgpu-info': '{vGPU' }, 'vgpu-info'],
  ['vgpu-info list not a list', { 'vgpu-info': '{"vGPURequests":"x"}' }, 'vgpu-info'],
  [
    'vgpu-info entry without a device',
    { 'vgpu-info': '{"vGPURequests":[{"name":"","deviceName":""}]}' },
    'vgpu-info',
  ],
  [
    'vgpu-info one name twice (equal libvirt aliases)',
    {
      'vgpu-info':
        '{"vGPURequests":[{"name":"gpu","deviceName":"nvidia.com/A2-1Q"},{"name":"gpu","deviceName":"nvidia.com/A2-2Q"}]}',
    },
    'vgpu-info',
  ],
  ['host-device-info not JSON', { 'host-device-info': '{"hostDevices":' }, 'host-device-info'],
  [
    'host-device-info with a PCI address for a resource name',
    { 'host-device-info': '{"hostDevices":[{"name":"a","deviceName":"0000:3b:00.0"}]}' },
    'host-device-info',
  ],
  ['ip-pool-info not JSON', { 'ip-pool-info': '{"network":' }, 'ip-pool-info'],
  [
    'ip-pool-info range outside its cidr',
    {
      'ip-pool-info':
        '{"network":"default/vlan1","cidr":"10.0.0.0/24","range":"10.0.1.10-10.0.1.20","gateway":"10.0.0.1","dns":["10.0.0.1"]}',
    },
    'ip-pool-info',
  ],
  ['vm-labels not key=value', { 'vm-labels': 'app=web,tier' }, 'vm-labels'],
  ['vm-labels with a key Harvester owns', { 'vm-labels': 'harvesterhci.io/vmName=x' }, 'vm-labels'],
  ['vm-annotations not a JSON object of strings', { 'vm-annotations': '{"a":1}' }, 'vm-annotations'],
  [
    'vm-annotations with Multus’s default-network key',
    { 'vm-annotations': 'v1.multus-cni.io/default-network=default/other' },
    'vm-annotations',
  ],
  [
    'vm-annotations with an AppArmor profile',
    { 'vm-annotations': 'container.apparmor.security.beta.kubernetes.io/compute=unconfined' },
    'vm-annotations',
  ],
  ['cpu pinning not a bool', { 'cpu-pinning': 'sure' }, 'cpu-pinning'],
  [
    'isolated emulator thread without pinning',
    { 'isolate-emulator-thread': true },
    'isolate-emulator-thread',
  ],
  ['tpm not a bool', { 'enable-tpm': 'sure' }, 'enable-tpm'],
  ['reserved memory ≥ memory', { 'reserved-memory-size': 4096 }, 'reserved-memory-size'],
  ['reserved memory not a number', { 'reserved-memory-size': '1G' }, 'reserved-memory-size'],
  ['cpu model with spaces', { 'cpu-model': 'Intel Xeon' }, 'cpu-model'],
  ['create timeout zero', { 'create-timeout': 0 }, 'create-timeout'],
  ['ip timeout negative', { 'ip-timeout': -1 }, 'ip-timeout'],
  ['remove timeout not a number', { 'remove-timeout': 'soon' }, 'remove-timeout'],
  ['ip network not one of the machine’s', { 'ip-network': 'default/other' }, 'ip-network'],
  ['cloud-init-in-secret not a bool', { 'cloud-init-in-secret': 'always' }, 'cloud-init-in-secret'],
  ['cluster type not a string', { 'cluster-type': 3 }, 'cluster-type'],
  ['cluster id not a string', { 'cluster-id': true }, 'cluster-id'],
  ['cloud-config not a string', { 'cloud-config': 1 }, 'cloud-config'],
  ['password not a string', { 'ssh-password': 7 }, 'ssh-password'],
  ['private key path not a string', { 'ssh-private-key-path': 7 }, 'ssh-private-key-path'],
  ['block multi-queue not a bool', { 'block-multi-queue': 'sometimes' }, 'block-multi-queue'],
  ['io threads policy not one of the three', { 'io-threads-policy': 'dedicated' }, 'io-threads-policy'],
  ['io thread count not a number', { 'io-thread-count': 'four' }, 'io-thread-count'],
];

describe('configFromFlags: malformed values', () => {
  for (const [what, overrides, flag] of MALFORMED) {
    it(`${what} → names --harvester-${flag}`, () => {
      const err = problemsOf(overrides);
      const named = err.problems.filter((p) => p.flag === `--harvester-${flag}`);
      assert.ok(named.length > 0, `no problem names --harvester-${flag}: ${err.message}`);
      for (const p of named) assert.ok(p.message.startsWith(`--harvester-${flag}: `), p.message);
      assert.ok(err.message.includes(`--harvester-${flag}`));
    });
  }

  it('every Go flag and every flag of ours has at least one malformed-value case', () => {
    const covered = new Set(MALFORMED.map(([, overrides]) => Object.keys(overrides)).flat());
    for (const name of defaultFlagValues().keys()) {
      assert.ok(covered.has(name.replace(/^harvester-/, '')), `no malformed-value case for --${name}`);
    }
  });

  it('collects every problem, not just the first', () => {
    const err = problemsOf({
      'cpu-count': 0,
      'disk-bus': 'ide',
      'network-model': 'x',
      'cpu-model': 'a b',
      'vm-affinity': '[',
    });
    const flags = new Set(err.problems.map((p) => p.flag));
    for (const f of ['cpu-count', 'disk-bus', 'network-model', 'cpu-model', 'vm-affinity']) {
      assert.ok(flags.has(`--harvester-${f}`), `missing ${f} in ${err.message}`);
    }
    assert.match(err.message, /^invalid machine configuration \(5 problems\):\n/);
  });

  it('does not also complain about the image and network when disk-info/network-info did not parse', () => {
    const err = problemsOf({ 'image-name': '', 'network-name': '', 'disk-info': '{', 'network-info': '{' });
    assert.deepEqual(err.problems.map((p) => p.flag).sort(), [
      '--harvester-disk-info',
      '--harvester-network-info',
    ]);
  });

  it('never quotes a secret: token, password, user data', () => {
    const secretUserData = `#cloud-config\npassword: TopSecretUserDataPassword\nruncmd: [unclosed`;
    const err = problemsOf({
      'kubeconfig-content': rancherKubeconfig({ currentContext: 'missing' }),
      'ssh-password': 'hunter2-TopSecret',
      'user-data': secretUserData,
      'network-data':
        'version: 1\nconfig: [{type: physical, name: eth0, subnets: [{type: static, gateway: "10.0.0.1", password: TopSecretNet}]}, {type: nameserver}]\n',
      'cpu-count': 0,
    });
    for (const secret of [
      FAKE_TOKEN,
      FAKE_TOKEN_SECRET,
      'hunter2-TopSecret',
      'TopSecretUserDataPassword',
      'TopSecretNet',
    ]) {
      assert.ok(!err.message.includes(secret), `error message leaks ${secret}: ${err.message}`);
    }
  });
});

describe('configFromFlags: oversized values', () => {
  const MiB = 1024 * 1024;
  const cloudConfig = (bytes: number): string => '#cloud-config\n' + '#'.repeat(bytes - 15) + '\n';

  for (const flag of ['user-data', 'network-data', 'kubeconfig-content', 'vm-affinity']) {
    it(`a 6 MiB base64 --harvester-${flag} is one problem naming the flag and the limit`, () => {
      const err = problemsOf({ [flag]: b64(cloudConfig(4.5 * MiB)) });
      const named = err.problems.filter((p) => p.flag === `--harvester-${flag}`);
      assert.equal(named.length, 1, err.message);
      assert.equal(
        named[0]?.message,
        `--harvester-${flag}: is 6.0 MiB; at most 2 MiB is accepted (more than any Kubernetes object can hold)`,
      );
    });
  }

  it('a 200 KiB value of a short flag is refused, naming the flag and the limit', () => {
    const err = problemsOf({ 'ssh-user': 'u'.repeat(200 * 1024) });
    assert.deepEqual(
      err.problems.map((p) => p.message),
      [
        '--harvester-ssh-user: is 200 KiB; at most 128 KiB is accepted (the most Linux passes as one argument)',
      ],
    );
  });

  it('accepts large values an operator may really give: 1.3 MiB of base64 user data, 100 KiB disk info', () => {
    const userData = cloudConfig(MiB - 64);
    const cfg = build({ 'user-data': b64(userData).replace(/(.{76})/g, '$1\n') });
    assert.equal(cfg.UserData, userData);
  });

  it('user data and network data that cannot fit the cloud-init Secret together are refused', () => {
    const networkData = 'version: 2\nethernets: {eth0: {dhcp4: true}}\n#' + '#'.repeat(0.5 * MiB) + '\n';
    const err = problemsOf({
      'user-data': cloudConfig(0.75 * MiB),
      'network-data': networkData,
      'vm-affinity': '[',
    });
    assert.deepEqual(
      err.problems.map((p) => p.message),
      [
        '--harvester-user-data: with --harvester-network-data is 1.3 MiB; the cloud-init Secret holds at most 1 MiB',
        '--harvester-vm-affinity: is not valid JSON (Unexpected end of JSON input) (expected a Kubernetes affinity like {"podAntiAffinity":{…}}, plain or base64)',
      ],
    );
  });
});

// Values the Go driver accepts and Harvester runs: ours must accept them too.
// [what, flag overrides, what the config then holds]
const ACCEPTED_AS_GO: Array<[string, Record<string, FlagValue>, (cfg: DriverConfig) => void]> = [
  [
    "the Go driver's own vGPU test input: names left empty",
    {
      'vgpu-info':
        '{"vGPURequests":[{"name":"","deviceName":"nvidia.com/NVIDIA_A2-2Q"},{"name":"","deviceName":"nvidia.com/NVIDIA_A2-1Q"}]}',
    },
    (cfg) =>
      assert.deepEqual(cfg.VGPUInfo?.vGPURequests, [
        { name: '', deviceName: 'nvidia.com/NVIDIA_A2-2Q' },
        { name: '', deviceName: 'nvidia.com/NVIDIA_A2-1Q' },
      ]),
  ],
  [
    'JSON keys in another case (Go matches fields case-insensitively)',
    {
      'disk-info': '{"Disks":[{"ImageName":"img","SIZE":10,"bootorder":1}]}',
      'network-info': '{"INTERFACES":[{"NetworkName":"vlan1","MACAddress":"52:54:00:12:34:56"}]}',
      'vgpu-info': '{"vgpurequests":[{"Name":"g","DeviceName":"nvidia.com/A2-1Q"}]}',
    },
    (cfg) => {
      assert.deepEqual(cfg.DiskInfo?.disks[0], {
        imageName: 'img',
        storageClassName: '',
        size: 10,
        bootOrder: 1,
        bus: '',
        type: '',
        hotPlugAble: false,
      });
      assert.equal(cfg.NetworkInfo?.interfaces[0]?.macAddress, '52:54:00:12:34:56');
      assert.deepEqual(cfg.VGPUInfo?.vGPURequests, [{ name: 'g', deviceName: 'nvidia.com/A2-1Q' }]);
    },
  ],
  [
    'a MAC address in dotted form (Go net.ParseMAC, which KubeVirt uses)',
    { 'network-info': nic({ macAddress: '5254.0012.3456' }) },
    (cfg) => assert.equal(cfg.NetworkInfo?.interfaces[0]?.macAddress, '5254.0012.3456'),
  ],
  [
    'a disk type other than disk and cd-rom: a disk',
    { 'disk-info': disk({ type: 'lun' }) },
    (cfg) => assert.equal(cfg.DiskInfo?.disks[0]?.type, 'lun'),
  ],
  [
    'an affinity of null: the default',
    { 'vm-affinity': 'null' },
    (cfg) => assert.equal(cfg.VMAffinity, 'null'),
  ],
  [
    'an affinity with keys in another case and unknown keys',
    {
      'vm-affinity':
        '{"PodAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"TopologyKey":"zone","x":1}]}}',
    },
    (cfg) => assert.match(cfg.VMAffinity, /PodAntiAffinity/),
  ],
  [
    'reserved memory below -1: none, as Go',
    { 'reserved-memory-size': -7 },
    (cfg) => assert.equal(cfg.ReservedMemorySize, ''),
  ],
  ['ssh port 0 (SSH uses 22)', { 'ssh-port': 0 }, (cfg) => assert.equal(cfg.SSHPort, 0)],
  [
    'ssh port beyond 65535 (only SSH would fail)',
    { 'ssh-port': 70000 },
    (cfg) => assert.equal(cfg.SSHPort, 70000),
  ],
  ['ssh user empty (SSH uses root)', { 'ssh-user': '' }, (cfg) => assert.equal(cfg.SSHUser, '')],
  ['ssh user with a space', { 'ssh-user': 'my user' }, (cfg) => assert.equal(cfg.SSHUser, 'my user')],
  [
    'network type of any value (never used)',
    { 'network-type': 'sriov' },
    (cfg) => assert.equal(cfg.NetworkType, 'sriov'),
  ],
];

describe('configFromFlags: values the Go driver accepts and Harvester runs', () => {
  for (const [what, overrides, check] of ACCEPTED_AS_GO) {
    it(what, () => {
      const needsNoLegacy: Record<string, FlagValue> =
        'disk-info' in overrides ? { 'image-name': '', 'disk-size': 0 } : {};
      check(build({ ...needsNoLegacy, ...overrides }));
    });
  }

  it('warns at create about what will not work as probably meant, naming the flag', () => {
    const warnings = configWarnings(
      build({
        'ssh-port': 70000,
        'ssh-user': 'my user',
        'disk-info': disk({ type: 'lun' }),
        'image-name': '',
      }),
    );
    assert.deepEqual(
      warnings.map((w) => w.split(':')[0]),
      ['--harvester-ssh-port', '--harvester-ssh-user', '--harvester-disk-info'],
    );
    assert.deepEqual(configWarnings(build()), []);
  });
});

describe('configFromFlags: what the Go driver saves', () => {
  it('converts as SetConfigFromFlags does', () => {
    const cfg = build({ 'memory-size': 8, 'reserved-memory-size': 256, 'disk-size': 40, 'cpu-count': 4 });
    assert.equal(cfg.MachineName, 'mycluster-pool1-7f8d9c5b6-x2v9q');
    assert.equal(cfg.StorePath, '/store');
    assert.equal(cfg.MemorySize, '8Gi');
    assert.equal(cfg.ReservedMemorySize, '256Mi');
    assert.equal(cfg.DiskSize, '40');
    assert.equal(cfg.CPU, 4);
    assert.equal(cfg.DiskBus, '', 'saved as given; the VM builder applies the virtio default');
    assert.equal(cfg.NetworkModel, '');
    assert.equal(cfg.KubeConfigContent, rancherKubeconfig(), 'base64 decoded');
    assert.equal(cfg.DiskInfo, null, 'no disk-info flag: the base value (nil) stays');
    assert.equal(cfg.SSHPort, 22);
    assert.equal(cfg.VMNamespace, 'default');
    assert.deepEqual(cfg.HarvesterMachine, {
      CreateTimeoutSeconds: 600,
      IPTimeoutSeconds: 600,
      RemoveTimeoutSeconds: 600,
      IPNetwork: '',
      CloudInitInSecret: false,
      IPPoolInfo: null,
      VMLabels: {},
      VMAnnotations: {},
      FixedAddress: null,
    });
  });

  it('leaves reserved memory unset for -1 and 0', () => {
    assert.equal(build({ 'reserved-memory-size': -1 }).ReservedMemorySize, '');
    assert.equal(build({ 'reserved-memory-size': 0 }).ReservedMemorySize, '');
  });

  it('decodes valid base64 of kubeconfig, affinity, user data and network data, and keeps plain values', () => {
    const userData = '#cloud-config\npackages: [qemu-guest-agent]\n';
    const networkData = 'version: 2\nethernets: {eth0: {dhcp4: true}}\n';
    const affinity = '{"podAntiAffinity":{}}';
    const encoded = build({
      'user-data': b64(userData),
      'network-data': b64(networkData),
      'vm-affinity': b64(affinity),
    });
    assert.equal(encoded.UserData, userData);
    assert.equal(encoded.NetworkData, networkData);
    assert.equal(encoded.VMAffinity, affinity);
    const plain = build({
      'user-data': userData,
      'network-data': networkData,
      'vm-affinity': affinity,
      'kubeconfig-content': rancherKubeconfig(),
    });
    assert.equal(plain.UserData, userData);
    assert.equal(plain.VMAffinity, affinity);
    assert.equal(plain.KubeConfigContent, rancherKubeconfig());
  });

  it('parses disk-info, network-info and vgpu-info with Go zero values for missing keys', () => {
    const cfg = build({
      'disk-info':
        '{"disks":[{"imageName":"default/image-abc12","size":40,"bootOrder":1},{"storageClassName":"longhorn","size":100,"hotPlugAble":true}]}',
      'network-info':
        '{"interfaces":[{"networkName":"default/vlan1"},{"networkName":"default/vlan2","macAddress":"52:54:00:12:34:56","type":"bridge"}]}',
      'vgpu-info': '{"vGPURequests":[{"name":"gpu1","deviceName":"nvidia.com/GRID_A100-1B"}]}',
      'image-name': '',
      'network-name': '',
      'disk-size': 0,
      'ip-network': 'default/vlan2',
    });
    assert.deepEqual(cfg.DiskInfo, {
      disks: [
        {
          imageName: 'default/image-abc12',
          storageClassName: '',
          size: 40,
          bootOrder: 1,
          bus: '',
          type: '',
          hotPlugAble: false,
        },
        {
          imageName: '',
          storageClassName: 'longhorn',
          size: 100,
          bootOrder: 0,
          bus: '',
          type: '',
          hotPlugAble: true,
        },
      ],
    });
    assert.deepEqual(cfg.NetworkInfo?.interfaces[1], {
      networkName: 'default/vlan2',
      macAddress: '52:54:00:12:34:56',
      model: '',
      type: 'bridge',
    });
    assert.deepEqual(cfg.VGPUInfo, {
      vGPURequests: [{ name: 'gpu1', deviceName: 'nvidia.com/GRID_A100-1B' }],
    });
    assert.equal(cfg.HarvesterMachine.IPNetwork, 'default/vlan2');
  });

  it('fills missing flags with their defaults and accepts ints and bools given as strings (our CLI)', () => {
    const cfg = configFromFlags(
      new Map<string, FlagValue>([
        ['harvester-image-name', 'img'],
        ['harvester-disk-size', '40'],
        ['harvester-network-name', 'vlan1'],
        ['harvester-enable-efi', 'true'],
        ['harvester-create-timeout', '900'],
      ]),
      newDriverConfig('m-a-b-c', '/s'),
    );
    assert.equal(cfg.CPU, 2);
    assert.equal(cfg.MemorySize, '4Gi');
    assert.equal(cfg.SSHUser, 'root');
    assert.equal(cfg.SSHPort, 22);
    assert.equal(cfg.DiskSize, '40');
    assert.equal(cfg.EnableEFI, true);
    assert.equal(cfg.HarvesterMachine.CreateTimeoutSeconds, 900);
    assert.equal(cfg.KubeConfigContent, '', 'optional, as in Go ($KUBECONFIG is used then)');
  });

  it('reads the swarm flags as BaseDriver does', () => {
    const values = validValues();
    values.set('swarm-master', true);
    values.set('swarm-host', 'tcp://0.0.0.0:3376');
    const cfg = configFromFlags(values, newDriverConfig('m'));
    assert.equal(cfg.SwarmMaster, true);
    assert.equal(cfg.SwarmHost, 'tcp://0.0.0.0:3376');
    assert.equal(cfg.SwarmDiscovery, '');
  });

  it('accepts what cloud-init accepts but the Go check rejects: DHCP4, dns_nameservers, physical without subnets', () => {
    const networkData =
      'version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n  - type: static\n    address: 10.0.0.2/24\n' +
      '    gateway: 10.0.0.1\n    dns_nameservers: [10.0.0.1]\n- type: physical\n  name: eth1\n';
    assert.equal(build({ 'network-data': networkData }).NetworkData, networkData);
    assert.doesNotThrow(() =>
      build({
        'network-data': 'version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n  - type: dhcp4\n',
      }),
    );
  });

  it('configProblems checks a saved config too', () => {
    const cfg = build();
    assert.deepEqual(configProblems(cfg), []);
    assert.deepEqual(
      configProblems({ ...cfg, CPU: 0, DiskSize: 'x' }).map((p) => p.flag),
      ['--harvester-cpu-count', '--harvester-disk-size'],
    );
  });
});

// Every refused combination of the storage options: [what, flag overrides, the flag, the field named].
const STORAGE_REFUSED: Array<[string, Record<string, FlagValue>, string, RegExp]> = [
  [
    'cache not a mode',
    { 'disk-info': disk({ cache: 'unsafe' }) },
    'disk-info',
    /disks\[0\]\.cache "unsafe" is not a cache mode \(expected one of none, writethrough, writeback\)/,
  ],
  [
    'io not a mode',
    { 'disk-info': disk({ io: 'io_uring' }) },
    'disk-info',
    /disks\[0\]\.io "io_uring" is not an I\/O mode \(expected one of native, threads\)/,
  ],
  [
    'io native with cache writeback',
    { 'disk-info': disk({ io: 'native', cache: 'writeback' }) },
    'disk-info',
    /disks\[0\]\.io native needs cache none \(got cache writeback\)/,
  ],
  [
    'io native without a cache',
    { 'disk-info': disk({ io: 'native' }) },
    'disk-info',
    /disks\[0\]\.io native needs cache none \(got no cache\)/,
  ],
  [
    'cache on a cd-rom',
    {
      'disk-info': JSON.stringify({
        disks: [
          { imageName: 'img', size: 10 },
          { imageName: 'iso', size: 1, type: 'cd-rom', bus: 'sata', cache: 'none', io: 'threads' },
        ],
      }),
    },
    'disk-info',
    /disks\[1\] is a cd-rom: cache, io are for disks only/,
  ],
  [
    'dedicated thread on a cd-rom',
    {
      'disk-info': JSON.stringify({
        disks: [
          { imageName: 'img', size: 10 },
          { imageName: 'iso', size: 1, type: 'cd-rom', dedicatedIOThread: true },
        ],
      }),
    },
    'disk-info',
    /disks\[1\] is a cd-rom: dedicatedIOThread is for disks only/,
  ],
  [
    'dedicated thread on sata (KubeVirt refuses)',
    { 'disk-info': disk({ bus: 'sata', dedicatedIOThread: true }) },
    'disk-info',
    /disks\[0\]\.dedicatedIOThread needs bus virtio \(got sata\)/,
  ],
  [
    'dedicated thread on scsi (KubeVirt refuses)',
    { 'disk-info': disk({ bus: 'scsi', dedicatedIOThread: true }) },
    'disk-info',
    /disks\[0\]\.dedicatedIOThread needs bus virtio \(got scsi\)/,
  ],
  [
    'dedicated thread not a bool',
    { 'disk-info': disk({ dedicatedIOThread: 'yes' }) },
    'disk-info',
    /disks\[0\]\.dedicatedIOThread must be true or false/,
  ],
  [
    'cache not a string',
    { 'disk-info': disk({ cache: 1 }) },
    'disk-info',
    /disks\[0\]\.cache must be a string/,
  ],
  [
    'policy not one of the three',
    { 'io-threads-policy': 'isolated' },
    'io-threads-policy',
    /"isolated" is not a policy \(expected one of shared, auto, supplementalPool\)/,
  ],
  [
    'a count with the shared policy',
    { 'io-threads-policy': 'shared', 'io-thread-count': '4' },
    'io-thread-count',
    /is only for --harvester-io-threads-policy supplementalPool \(got policy shared\)/,
  ],
  [
    'a count without a policy',
    { 'io-thread-count': '2' },
    'io-thread-count',
    /is only for --harvester-io-threads-policy supplementalPool \(got no policy\)/,
  ],
  [
    'a count above 2^32-1',
    { 'io-threads-policy': 'supplementalPool', 'io-thread-count': '4294967296' },
    'io-thread-count',
    /must be a whole number from 0 to 4294967295 \(got 4294967296\)/,
  ],
  [
    'a negative count',
    { 'io-threads-policy': 'supplementalPool', 'io-thread-count': '-1' },
    'io-thread-count',
    /must be a whole number from 0 to 4294967295 \(got -1\)/,
  ],
  [
    'supplementalPool with no count (KubeVirt refuses)',
    { 'io-threads-policy': 'supplementalPool' },
    'io-thread-count',
    /must be at least 1 with --harvester-io-threads-policy supplementalPool/,
  ],
];

describe('configFromFlags: storage options refused before anything is created, naming the field', () => {
  for (const [what, overrides, flag, field] of STORAGE_REFUSED) {
    it(`${what} → --harvester-${flag}`, () => {
      const err = problemsOf(overrides);
      const named = err.problems.filter((p) => p.flag === `--harvester-${flag}`);
      assert.equal(named.length, 1, err.message);
      assert.match(named[0]?.message ?? '', new RegExp(`^--harvester-${flag}: ${field.source}`));
    });
  }

  it('every storage option has a refused case', () => {
    const text = STORAGE_REFUSED.map(([, o]) => JSON.stringify(o)).join(' ');
    for (const f of ['cache', 'io', 'dedicatedIOThread', 'io-threads-policy', 'io-thread-count']) {
      assert.ok(text.includes(f), f);
    }
  });
});

describe('configFromFlags: storage options accepted', () => {
  it('reads the three flags (the count as Rancher passes an int flag: a string) and the disk fields', () => {
    const cfg = build({
      'block-multi-queue': 'true',
      'io-threads-policy': 'supplementalPool',
      'io-thread-count': '4294967295',
      'disk-info': JSON.stringify({
        disks: [
          { imageName: 'img', size: 10, cache: 'none', io: 'native', dedicatedIOThread: true },
          { storageClassName: 'longhorn', size: 5, cache: 'writeback', io: 'threads' },
          { imageName: 'iso', size: 1, type: 'cd-rom' },
        ],
      }),
    });
    assert.equal(cfg.BlockMultiQueue, true);
    assert.equal(cfg.IOThreadsPolicy, 'supplementalPool');
    assert.equal(cfg.IOThreadCount, 4294967295);
    const [first, second, third] = cfg.DiskInfo?.disks ?? [];
    assert.deepEqual([first?.cache, first?.io, first?.dedicatedIOThread], ['none', 'native', true]);
    assert.deepEqual(
      [second?.cache, second?.io, second?.dedicatedIOThread],
      ['writeback', 'threads', undefined],
    );
    assert.deepEqual([third?.cache, third?.io, third?.dedicatedIOThread], [undefined, undefined, undefined]);
  });

  it('leaves them unset by default', () => {
    const cfg = build();
    assert.deepEqual([cfg.BlockMultiQueue, cfg.IOThreadsPolicy, cfg.IOThreadCount], [false, '', 0]);
  });

  it('takes a dedicated thread without a policy (the VM gets shared)', () => {
    const cfg = build({ 'disk-info': disk({ dedicatedIOThread: true }) });
    assert.equal(cfg.IOThreadsPolicy, '');
    assert.equal(cfg.DiskInfo?.disks[0]?.dedicatedIOThread, true);
  });
});
