import fs from 'node:fs';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlags, FLAG_TABLE, flagByName, FLAGS } from './flags.js';

// The Go driver's table (harvester/flags.go at 0b90d05), written out independently of flags.ts.
const GO_FLAGS: Array<[string, string, 'string' | 'int' | 'bool', string | number | false, string]> = [
  [
    'harvester-kubeconfig-content',
    'HARVESTER_KUBECONFIG_CONTENT',
    'string',
    '',
    'contents of kubeconfig file for harvester cluster, base64 is supported',
  ],
  ['harvester-cluster-type', 'HARVESTER_CLUSTER_TYPE', 'string', '', 'harvester cluster type'],
  ['harvester-cluster-id', 'HARVESTER_CLUSTER_ID', 'string', '', 'harvester cluster id'],
  ['harvester-cluster-name', 'HARVESTER_CLUSTER_NAME', 'string', '', 'harvester cluster name'],
  ['harvester-vm-namespace', 'HARVESTER_VM_NAMESPACE', 'string', 'default', 'harvester vm namespace'],
  ['harvester-cpu-count', 'HARVESTER_CPU_COUNT', 'int', 2, 'number of CPUs for machine'],
  ['harvester-memory-size', 'HARVESTER_MEMORY_SIZE', 'int', 4, 'size of memory for machine (in GiB)'],
  ['harvester-disk-size', 'HARVESTER_DISK_SIZE', 'int', 0, 'size of disk for machine (in GiB)'],
  ['harvester-disk-bus', 'HARVESTER_DISK_BUS', 'string', '', 'bus of disk for machine'],
  ['harvester-image-name', 'HARVESTER_IMAGE_NAME', 'string', '', 'harvester image name'],
  ['harvester-disk-info', 'HARVESTER_DISK_INFO', 'string', '', 'harvester disk info'],
  ['harvester-ssh-user', 'HARVESTER_SSH_USER', 'string', 'root', 'SSH username'],
  ['harvester-ssh-port', 'HARVESTER_SSH_PORT', 'int', 22, 'SSH port'],
  ['harvester-ssh-password', 'HARVESTER_SSH_PASSWORD', 'string', '', 'SSH password'],
  ['harvester-key-pair-name', 'HARVESTER_KEY_PAIR_NAME', 'string', '', 'harvester key pair name'],
  ['harvester-ssh-private-key-path', 'HARVESTER_SSH_PRIVATE_KEY_PATH', 'string', '', 'SSH private key path '],
  ['harvester-network-type', 'HARVESTER_NETWORK_TYPE', 'string', '', 'harvester network type'],
  ['harvester-network-name', 'HARVESTER_NETWORK_NAME', 'string', '', 'harvester network name'],
  ['harvester-network-model', 'HARVESTER_NETWORK_MODEL', 'string', '', 'harvester network model'],
  ['harvester-network-info', 'HARVESTER_NETWORK_INFO', 'string', '', 'harvester network info'],
  [
    'harvester-cloud-config',
    'HARVESTER_CLOUD_CONFIG',
    'string',
    '',
    'just keep it empty, this value will be filled by rancher-machine',
  ],
  [
    'harvester-user-data',
    'HARVESTER_USER_DATA',
    'string',
    '',
    'userData content of cloud-init for machine, base64 is supported',
  ],
  [
    'harvester-network-data',
    'HARVESTER_NETWORK_DATA',
    'string',
    '',
    'networkData content of cloud-init for machine, base64 is supported',
  ],
  [
    'harvester-vm-affinity',
    'HARVESTER_VM_AFFINITY',
    'string',
    '',
    'harvester vm affinity, base64 is supported',
  ],
  ['harvester-enable-efi', 'HARVESTER_ENABLE_EFI', 'bool', false, 'enable vm efi'],
  [
    'harvester-enable-secure-boot',
    'HARVESTER_ENABLE_SECURE_BOOT',
    'bool',
    false,
    'enable vm secure boot, only works when enable efi',
  ],
  ['harvester-vgpu-info', 'HARVESTER_VGPU_INFO', 'string', '', 'harvester-vgpu-info'],
  [
    'harvester-cpu-pinning',
    'HARVESTER_CPU_PINNING',
    'bool',
    false,
    'enable vm cpu pinning, please ensure the harvester cluster has cpu manager enabled in at least one node',
  ],
  [
    'harvester-isolate-emulator-thread',
    'HARVESTER_ISOLATE_EMULATOR_THREAD',
    'bool',
    false,
    'enable vm isolatated emulator thread',
  ],
  ['harvester-enable-tpm', 'HARVESTER_ENABLE_TPM', 'bool', false, 'enable vm TPM'],
  [
    'harvester-reserved-memory-size',
    'HARVESTER_RESERVED_MEMORY_SIZE',
    'int',
    -1,
    'size of reserved memory for machine (in MiB, integer value)',
  ],
  ['harvester-cpu-model', 'HARVESTER_CPU_MODEL', 'string', '', 'model of CPU for machine'],
];

describe('flag table', () => {
  it('starts with the Go driver’s 32 flags, in order, identical in every column', () => {
    const go = FLAG_TABLE.filter((f) => f.origin === 'go');
    assert.equal(go.length, 32);
    assert.deepEqual(
      go.map((f) => [f.name, f.envVar, f.kind, f.defaultValue, f.usage]),
      GO_FLAGS,
    );
    assert.deepEqual(FLAG_TABLE.slice(0, 32), go, 'Go flags come first');
  });

  it('adds our flags after the Go ones, with Go’s 600 s waits as timeout defaults', () => {
    const ours = FLAG_TABLE.filter((f) => f.origin === 'harvester-machine');
    assert.deepEqual(
      ours.map((f) => [f.name, f.envVar, f.kind, f.defaultValue]),
      [
        ['harvester-create-timeout', 'HARVESTER_CREATE_TIMEOUT', 'int', 600],
        ['harvester-ip-timeout', 'HARVESTER_IP_TIMEOUT', 'int', 600],
        ['harvester-remove-timeout', 'HARVESTER_REMOVE_TIMEOUT', 'int', 600],
        ['harvester-ip-network', 'HARVESTER_IP_NETWORK', 'string', ''],
        ['harvester-cloud-init-in-secret', 'HARVESTER_CLOUD_INIT_IN_SECRET', 'bool', false],
        ['harvester-host-device-info', 'HARVESTER_HOST_DEVICE_INFO', 'string', ''],
        ['harvester-ip-pool-info', 'HARVESTER_IP_POOL_INFO', 'string', ''],
        ['harvester-vm-labels', 'HARVESTER_VM_LABELS', 'string', ''],
        ['harvester-vm-annotations', 'HARVESTER_VM_ANNOTATIONS', 'string', ''],
        ['harvester-block-multi-queue', 'HARVESTER_BLOCK_MULTI_QUEUE', 'bool', false],
        ['harvester-io-threads-policy', 'HARVESTER_IO_THREADS_POLICY', 'string', ''],
        ['harvester-io-thread-count', 'HARVESTER_IO_THREAD_COUNT', 'int', 0],
      ],
    );
  });

  it('has unique names and environment variables derived from them', () => {
    assert.equal(new Set(FLAG_TABLE.map((f) => f.name)).size, FLAG_TABLE.length);
    for (const f of FLAG_TABLE) assert.equal(f.envVar, f.name.toUpperCase().replaceAll('-', '_'));
  });

  it('renders McnFlags as mcnflag does: bools without a value, strings and ints with their default', () => {
    const flags = createFlags();
    assert.equal(flags.length, FLAG_TABLE.length);
    assert.deepEqual(flags[0], {
      kind: 'string',
      name: 'harvester-kubeconfig-content',
      usage: 'contents of kubeconfig file for harvester cluster, base64 is supported',
      envVar: 'HARVESTER_KUBECONFIG_CONTENT',
      value: '',
    });
    assert.deepEqual(
      flags.find((f) => f.name === 'harvester-reserved-memory-size'),
      {
        kind: 'int',
        name: 'harvester-reserved-memory-size',
        usage: 'size of reserved memory for machine (in MiB, integer value)',
        envVar: 'HARVESTER_RESERVED_MEMORY_SIZE',
        value: -1,
      },
    );
    const efi = flags.find((f) => f.name === 'harvester-enable-efi');
    assert.deepEqual(efi, {
      kind: 'bool',
      name: 'harvester-enable-efi',
      usage: 'enable vm efi',
      envVar: 'HARVESTER_ENABLE_EFI',
    });
  });

  it('finds a flag with or without dashes', () => {
    assert.equal(flagByName('--harvester-disk-info'), FLAGS.diskInfo);
    assert.equal(flagByName('harvester-disk-info'), FLAGS.diskInfo);
    assert.equal(flagByName('harvester-nope'), undefined);
  });
});

describe('docs/flags.md: the flags beyond the Go driver’s', () => {
  const page = fs.readFileSync(new URL('../../../../docs/flags.md', import.meta.url), 'utf8');
  const section = page.slice(page.indexOf('# Flags beyond the Go driver'));
  const ours = FLAG_TABLE.filter((f) => f.origin === 'harvester-machine');
  /** Where the section's table ends: the next heading after its own, or the end of the page. */
  const nextHeading = (text: string): number | undefined => {
    const at = text.slice(1).search(/^#{1,6} /m);
    return at < 0 ? undefined : at + 1;
  };

  it('lists every flag of ours in its table, and no other', () => {
    const rows = [...section.slice(0, nextHeading(section)).matchAll(/^\| `--(harvester-[a-z-]+)` \|/gm)].map(
      (m) => m[1],
    );
    assert.deepEqual(
      rows,
      ours.map((f) => f.name),
    );
  });

  it('gives the counts of the table', () => {
    const go = FLAG_TABLE.length - ours.length;
    assert.match(section, new RegExp(`The Go driver's ${go} flags`));
    assert.match(
      section,
      new RegExp(`${ours.length} flags of ours after the Go driver's ${go}, ${FLAG_TABLE.length} in all`),
    );
  });
});
