// A config.json Driver object exactly as the Go driver writes it, for drop-in tests.
import path from 'node:path';

/**
 * The Driver object the Go driver's json.Marshal writes (docs/upstream/go-driver.md#saved-driver-config):
 * BaseDriver's fields flattened first, then the Harvester fields in declaration order, Go zero values.
 */
export function goDriverConfig(opts: {
  name: string;
  store: string;
  kubeconfig: string;
  ip: string;
  clusterName: string;
  namespace: string;
  image: string;
  network: string;
}): Record<string, unknown> {
  return {
    IPAddress: opts.ip,
    IPv6Address: '',
    MachineName: opts.name,
    SSHUser: 'ubuntu',
    SSHPort: 22,
    SSHKeyPath: path.join(opts.store, 'machines', opts.name, 'id_rsa'),
    StorePath: opts.store,
    SwarmMaster: false,
    SwarmHost: '',
    SwarmDiscovery: '',
    KubeConfigContent: opts.kubeconfig,
    VMNamespace: opts.namespace,
    VMAffinity: '',
    ClusterType: 'imported',
    ClusterID: 'c-m-sandbox',
    ClusterName: opts.clusterName,
    ServerVersion: 'v1.8.0',
    CPU: 2,
    CPUModel: '',
    MemorySize: '4Gi',
    ReservedMemorySize: '',
    DiskSize: '40',
    DiskBus: 'virtio',
    ImageName: opts.image,
    DiskInfo: null,
    KeyPairName: '',
    SSHPrivateKeyPath: '',
    SSHPublicKey: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 machine',
    SSHPassword: '',
    AddUserToDockerGroup: false,
    NetworkType: '',
    NetworkName: opts.network,
    NetworkModel: 'virtio',
    NetworkInfo: null,
    CloudConfig: '/tmp/modified-user-data1234567',
    UserData: '',
    NetworkData: '',
    EnableEFI: false,
    EnableSecureBoot: false,
    VGPUInfo: null,
    CPUPinning: false,
    IsolateEmulatorThread: false,
    EnableTPM: false,
  };
}
