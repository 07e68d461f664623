// The saved driver config, field for field as the Go driver's json.Marshal writes it:
// BaseDriver fields flattened first, then the Harvester fields, Go names as keys.
// Keeping Go's names as our property names means no mapping layer can drift.

export interface GoDiskInfo {
  disks: Array<{
    imageName: string;
    storageClassName: string;
    size: number;
    bootOrder: number;
    bus: string;
    type: string;
    hotPlugAble: boolean;
    /**
     * The storage options (harvester#11550): KubeVirt's disk fields under the names Rancher's
     * machine-pool form gives them. Absent while unset, so a disk without them is written as
     * the Go driver of today writes it.
     */
    cache?: string;
    io?: string;
    dedicatedIOThread?: boolean;
  }>;
}

export interface GoNetworkInfo {
  interfaces: Array<{ networkName: string; macAddress: string; model: string; type: string }>;
}

export interface GoVGPUInfo {
  vGPURequests: Array<{ name: string; deviceName: string }>;
}

/**
 * --harvester-host-device-info: PCI and USB devices passed through to the VM. Not in the Go
 * driver yet: the field and its place follow harvester/docker-machine-driver-harvester#96
 * (docs/upstream/harvester-host-devices.md#the-go-driver-proposal), so today's Go driver
 * ignores the key and one with that change reads it the same way.
 */
export interface GoHostDeviceInfo {
  hostDevices: Array<{ name: string; deviceName: string }>;
}

export interface GoBaseDriver {
  IPAddress: string;
  IPv6Address: string;
  MachineName: string;
  SSHUser: string;
  SSHPort: number;
  SSHKeyPath: string;
  StorePath: string;
  SwarmMaster: boolean;
  SwarmHost: string;
  SwarmDiscovery: string;
}

export interface GoHarvesterFields {
  KubeConfigContent: string;
  VMNamespace: string;
  VMAffinity: string;
  ClusterType: string;
  ClusterID: string;
  ClusterName: string;
  ServerVersion: string;
  CPU: number;
  CPUModel: string;
  MemorySize: string;
  ReservedMemorySize: string;
  DiskSize: string;
  DiskBus: string;
  ImageName: string;
  DiskInfo: GoDiskInfo | null;
  KeyPairName: string;
  SSHPrivateKeyPath: string;
  SSHPublicKey: string;
  SSHPassword: string;
  AddUserToDockerGroup: boolean;
  NetworkType: string;
  NetworkName: string;
  NetworkModel: string;
  NetworkInfo: GoNetworkInfo | null;
  CloudConfig: string;
  UserData: string;
  NetworkData: string;
  EnableEFI: boolean;
  EnableSecureBoot: boolean;
  VGPUInfo: GoVGPUInfo | null;
  HostDeviceInfo: GoHostDeviceInfo | null;
  CPUPinning: boolean;
  IsolateEmulatorThread: boolean;
  EnableTPM: boolean;
  /**
   * The storage options of harvester#11550, named as Rancher's form names the fields and as
   * the Go driver names its fields after its flags (docs/upstream/go-driver.md#storage-options).
   * Not in today's Go driver: left out of config.json while at their zero values.
   */
  BlockMultiQueue: boolean;
  IOThreadsPolicy: string;
  IOThreadCount: number;
}

export type GoDriverConfig = GoBaseDriver & GoHarvesterFields;

/** The Go driver's NewDriver(hostName, storePath): Go zero values everywhere else. */
export function newGoDriverConfig(machineName = '', storePath = ''): GoDriverConfig {
  return {
    IPAddress: '',
    IPv6Address: '',
    MachineName: machineName,
    SSHUser: '',
    SSHPort: 0,
    SSHKeyPath: '',
    StorePath: storePath,
    SwarmMaster: false,
    SwarmHost: '',
    SwarmDiscovery: '',
    KubeConfigContent: '',
    VMNamespace: '',
    VMAffinity: '',
    ClusterType: '',
    ClusterID: '',
    ClusterName: '',
    ServerVersion: '',
    CPU: 0,
    CPUModel: '',
    MemorySize: '',
    ReservedMemorySize: '',
    DiskSize: '',
    DiskBus: '',
    ImageName: '',
    DiskInfo: null,
    KeyPairName: '',
    SSHPrivateKeyPath: '',
    SSHPublicKey: '',
    SSHPassword: '',
    AddUserToDockerGroup: false,
    NetworkType: '',
    NetworkName: '',
    NetworkModel: '',
    NetworkInfo: null,
    CloudConfig: '',
    UserData: '',
    NetworkData: '',
    EnableEFI: false,
    EnableSecureBoot: false,
    VGPUInfo: null,
    HostDeviceInfo: null,
    CPUPinning: false,
    IsolateEmulatorThread: false,
    EnableTPM: false,
    BlockMultiQueue: false,
    IOThreadsPolicy: '',
    IOThreadCount: 0,
  };
}
