// The driver's create flags. The first 32 are the Go driver's (harvester/flags.go):
// same names, environment variables, types, defaults and usage strings, because Rancher
// builds its HarvesterConfig schema (and the UI defaults) from this table, and an
// existing HarvesterConfig must mean the same thing to both drivers.
// The flags marked `origin: 'harvester-machine'` are ours; the Go driver has none of them.

import type { FlagValue, McnFlag } from '../machine-driver.js';

export type FlagKind = 'string' | 'int' | 'bool';

interface FlagSpecBase {
  /** Name without the leading `--`, as on the wire (RPCFlags keys) and in argv. */
  readonly name: string;
  readonly envVar: string;
  readonly usage: string;
  /** 'go': the Go driver has this flag; 'harvester-machine': our addition. */
  readonly origin: 'go' | 'harvester-machine';
}

export type FlagSpec =
  | (FlagSpecBase & { readonly kind: 'string'; readonly defaultValue: string })
  | (FlagSpecBase & { readonly kind: 'int'; readonly defaultValue: number })
  | (FlagSpecBase & { readonly kind: 'bool'; readonly defaultValue: false });

const str = (name: string, envVar: string, usage: string, defaultValue = ''): FlagSpec => ({
  kind: 'string',
  name,
  envVar,
  usage,
  defaultValue,
  origin: 'go',
});
const int = (name: string, envVar: string, usage: string, defaultValue = 0): FlagSpec => ({
  kind: 'int',
  name,
  envVar,
  usage,
  defaultValue,
  origin: 'go',
});
const bool = (name: string, envVar: string, usage: string): FlagSpec => ({
  kind: 'bool',
  name,
  envVar,
  usage,
  defaultValue: false,
  origin: 'go',
});
const ours = (spec: FlagSpec): FlagSpec => ({ ...spec, origin: 'harvester-machine' });

/** Go waits 120 polls x 5 s for Running, for an IP and for removal. */
export const GO_WAIT_SECONDS = 600;
/** `--harvester-reserved-memory-size` default: "not given" (Go's -1). */
export const RESERVED_MEMORY_UNSET = -1;
/** rancher/machine's drivers.DefaultSSHUser, which the Go driver uses as the ssh-user default. */
export const DEFAULT_SSH_USER = 'root';

/** Every flag by a short key, in the Go driver's order, then ours. */
export const FLAGS = {
  kubeconfigContent: str(
    'harvester-kubeconfig-content',
    'HARVESTER_KUBECONFIG_CONTENT',
    'contents of kubeconfig file for harvester cluster, base64 is supported',
  ),
  clusterType: str('harvester-cluster-type', 'HARVESTER_CLUSTER_TYPE', 'harvester cluster type'),
  clusterId: str('harvester-cluster-id', 'HARVESTER_CLUSTER_ID', 'harvester cluster id'),
  clusterName: str('harvester-cluster-name', 'HARVESTER_CLUSTER_NAME', 'harvester cluster name'),
  vmNamespace: str('harvester-vm-namespace', 'HARVESTER_VM_NAMESPACE', 'harvester vm namespace', 'default'),
  cpuCount: int('harvester-cpu-count', 'HARVESTER_CPU_COUNT', 'number of CPUs for machine', 2),
  memorySize: int('harvester-memory-size', 'HARVESTER_MEMORY_SIZE', 'size of memory for machine (in GiB)', 4),
  diskSize: int('harvester-disk-size', 'HARVESTER_DISK_SIZE', 'size of disk for machine (in GiB)'),
  diskBus: str('harvester-disk-bus', 'HARVESTER_DISK_BUS', 'bus of disk for machine'),
  imageName: str('harvester-image-name', 'HARVESTER_IMAGE_NAME', 'harvester image name'),
  diskInfo: str('harvester-disk-info', 'HARVESTER_DISK_INFO', 'harvester disk info'),
  sshUser: str('harvester-ssh-user', 'HARVESTER_SSH_USER', 'SSH username', DEFAULT_SSH_USER),
  sshPort: int('harvester-ssh-port', 'HARVESTER_SSH_PORT', 'SSH port', 22),
  sshPassword: str('harvester-ssh-password', 'HARVESTER_SSH_PASSWORD', 'SSH password'),
  keyPairName: str('harvester-key-pair-name', 'HARVESTER_KEY_PAIR_NAME', 'harvester key pair name'),
  // The trailing space is the Go driver's; Rancher shows this text.
  sshPrivateKeyPath: str(
    'harvester-ssh-private-key-path',
    'HARVESTER_SSH_PRIVATE_KEY_PATH',
    'SSH private key path ',
  ),
  networkType: str('harvester-network-type', 'HARVESTER_NETWORK_TYPE', 'harvester network type'),
  networkName: str('harvester-network-name', 'HARVESTER_NETWORK_NAME', 'harvester network name'),
  networkModel: str('harvester-network-model', 'HARVESTER_NETWORK_MODEL', 'harvester network model'),
  networkInfo: str('harvester-network-info', 'HARVESTER_NETWORK_INFO', 'harvester network info'),
  cloudConfig: str(
    'harvester-cloud-config',
    'HARVESTER_CLOUD_CONFIG',
    'just keep it empty, this value will be filled by rancher-machine',
  ),
  userData: str(
    'harvester-user-data',
    'HARVESTER_USER_DATA',
    'userData content of cloud-init for machine, base64 is supported',
  ),
  networkData: str(
    'harvester-network-data',
    'HARVESTER_NETWORK_DATA',
    'networkData content of cloud-init for machine, base64 is supported',
  ),
  vmAffinity: str(
    'harvester-vm-affinity',
    'HARVESTER_VM_AFFINITY',
    'harvester vm affinity, base64 is supported',
  ),
  enableEfi: bool('harvester-enable-efi', 'HARVESTER_ENABLE_EFI', 'enable vm efi'),
  enableSecureBoot: bool(
    'harvester-enable-secure-boot',
    'HARVESTER_ENABLE_SECURE_BOOT',
    'enable vm secure boot, only works when enable efi',
  ),
  vgpuInfo: str('harvester-vgpu-info', 'HARVESTER_VGPU_INFO', 'harvester-vgpu-info'),
  cpuPinning: bool(
    'harvester-cpu-pinning',
    'HARVESTER_CPU_PINNING',
    'enable vm cpu pinning, please ensure the harvester cluster has cpu manager enabled in at least one node',
  ),
  // "isolatated" is the Go driver's spelling; Rancher shows this text.
  isolateEmulatorThread: bool(
    'harvester-isolate-emulator-thread',
    'HARVESTER_ISOLATE_EMULATOR_THREAD',
    'enable vm isolatated emulator thread',
  ),
  enableTpm: bool('harvester-enable-tpm', 'HARVESTER_ENABLE_TPM', 'enable vm TPM'),
  reservedMemorySize: int(
    'harvester-reserved-memory-size',
    'HARVESTER_RESERVED_MEMORY_SIZE',
    'size of reserved memory for machine (in MiB, integer value)',
    RESERVED_MEMORY_UNSET,
  ),
  cpuModel: str('harvester-cpu-model', 'HARVESTER_CPU_MODEL', 'model of CPU for machine'),

  // ---- harvester-machine additions (not in the Go driver) ----
  createTimeout: ours(
    int(
      'harvester-create-timeout',
      'HARVESTER_CREATE_TIMEOUT',
      'seconds to wait for the machine to be running after it was created',
      GO_WAIT_SECONDS,
    ),
  ),
  ipTimeout: ours(
    int(
      'harvester-ip-timeout',
      'HARVESTER_IP_TIMEOUT',
      'seconds to wait for the machine to report an IP address (needs qemu-guest-agent in the guest)',
      GO_WAIT_SECONDS,
    ),
  ),
  removeTimeout: ours(
    int(
      'harvester-remove-timeout',
      'HARVESTER_REMOVE_TIMEOUT',
      'seconds to wait for the machine to be removed',
      GO_WAIT_SECONDS,
    ),
  ),
  ipNetwork: ours(
    str(
      'harvester-ip-network',
      'HARVESTER_IP_NETWORK',
      'network (namespace/name, or interface name nic-<i>) whose interface gives the node IP; default: the first interface with an address',
    ),
  ),
  cloudInitInSecret: ours(
    bool(
      'harvester-cloud-init-in-secret',
      'HARVESTER_CLOUD_INIT_IN_SECRET',
      'always put cloud-init user data and network data in a Secret instead of inline in the VM',
    ),
  ),
  // The name, variable and field are those proposed for the Go driver (harvester#10764,
  // docker-machine-driver-harvester#96), so Rancher's node-pool form finds `hostDeviceInfo`.
  hostDeviceInfo: ours(
    str(
      'harvester-host-device-info',
      'HARVESTER_HOST_DEVICE_INFO',
      'PCI and USB devices passed through to the machine, enabled for passthrough in Harvester first: {"hostDevices":[{"name":"hostdevice-1","deviceName":"<device resource name>"}]}, base64 is supported',
    ),
  ),
  // Named as the other *-info flags; Rancher's HarvesterConfig field is ipPoolInfo.
  ipPoolInfo: ours(
    str(
      'harvester-ip-pool-info',
      'HARVESTER_IP_POOL_INFO',
      'a fixed IPv4 address per machine from this pool: {"network":"default/vlan100","range":"192.168.100.10-192.168.100.19","prefix":24,"gateway":"192.168.100.1","dns":["192.168.100.1"]} (also "cidr", "exclude", "interface"); with only "network", the network\'s Harvester IP pool (vm-dhcp-controller) gives it; base64 is supported',
    ),
  ),
  // The name and variable of the Go driver's open PR #83.
  vmLabels: ours(
    str(
      'harvester-vm-labels',
      'HARVESTER_VM_LABELS',
      "labels for the machine's VM and its pod (load balancer and affinity selectors): key=value,key2=value2 or a JSON object",
    ),
  ),
  vmAnnotations: ours(
    str(
      'harvester-vm-annotations',
      'HARVESTER_VM_ANNOTATIONS',
      "annotations for the machine's VM and its pod: key=value,key2=value2 or a JSON object (for values with commas)",
    ),
  ),
  // The storage options of harvester#11550, named after the fields of Rancher's Harvester
  // machine-pool form (blockMultiQueue, ioThreadsPolicy, ioThreadCount) the way Rancher names
  // a field after a flag (docs/upstream/rancher.md#machine-config-fields-from-driver-flags);
  // the per-disk options are fields of --harvester-disk-info.
  blockMultiQueue: ours(
    bool(
      'harvester-block-multi-queue',
      'HARVESTER_BLOCK_MULTI_QUEUE',
      'enable virtio multi-queue for the block devices of the machine (one queue per vCPU)',
    ),
  ),
  ioThreadsPolicy: ours(
    str(
      'harvester-io-threads-policy',
      'HARVESTER_IO_THREADS_POLICY',
      "I/O threads of the machine's disks: shared, auto or supplementalPool (default: none, or shared when a disk of --harvester-disk-info asks for a dedicatedIOThread)",
    ),
  ),
  ioThreadCount: ours(
    int(
      'harvester-io-thread-count',
      'HARVESTER_IO_THREAD_COUNT',
      'number of I/O threads in the pool of the supplementalPool policy (1 to 4294967295; only with --harvester-io-threads-policy supplementalPool)',
    ),
  ),
} as const satisfies Record<string, FlagSpec>;

export type FlagKey = keyof typeof FLAGS;

/** The whole table in order: the Go driver's 32 flags, then ours. */
export const FLAG_TABLE: readonly FlagSpec[] = Object.values(FLAGS);

const BY_NAME: ReadonlyMap<string, FlagSpec> = new Map(FLAG_TABLE.map((f) => [f.name, f]));

export function flagByName(name: string): FlagSpec | undefined {
  return BY_NAME.get(name.replace(/^-+/, ''));
}

/** `--harvester-disk-info`: how a flag is named in messages meant for people. */
export function cliName(spec: FlagSpec | string): string {
  return `--${typeof spec === 'string' ? spec : spec.name}`;
}

/** The flags as GetCreateFlags returns them (mcnflag.StringFlag / IntFlag / BoolFlag). */
export function createFlags(): McnFlag[] {
  return FLAG_TABLE.map((f): McnFlag => {
    switch (f.kind) {
      case 'string':
        return { kind: 'string', name: f.name, usage: f.usage, envVar: f.envVar, value: f.defaultValue };
      case 'int':
        return { kind: 'int', name: f.name, usage: f.usage, envVar: f.envVar, value: f.defaultValue };
      case 'bool':
        return { kind: 'bool', name: f.name, usage: f.usage, envVar: f.envVar };
    }
  });
}

/** Default values of every flag, as a FlagValues map would carry them. */
export function defaultFlagValues(): Map<string, FlagValue> {
  return new Map(FLAG_TABLE.map((f) => [f.name, f.defaultValue]));
}
