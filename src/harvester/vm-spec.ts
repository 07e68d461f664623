// The VirtualMachine the driver creates for a machine: exactly what the Go driver builds
// with Harvester's pkg/builder (create.go), so Harvester's controllers, Rancher and an
// operator see the same object whichever driver made it. Pure: lookups the build needs
// (the image's storage class, random PVC suffixes) come in through the context.

import type { GoDiskInfo, GoDriverConfig, GoNetworkInfo } from './config/go-config.js';
import { assembleUserData, placeCloudInit } from './cloud-init/cloud-init.js';
import { DEFAULT_DISK_BUS, DEFAULT_NETWORK_MODEL, vgpuDeviceNames } from './disk-network-info.js';
import { hostDeviceEntries } from './host-devices/host-devices.js';
import { applyIoThreadOptions, diskStorageFields } from './storage-options.js';
import {
  ANNOTATION_IMAGE_ID,
  ANNOTATION_RESERVED_MEMORY,
  ANNOTATION_SSH_NAMES,
  ANNOTATION_VOLUME_CLAIM_TEMPLATES,
  ANNOTATION_WAIT_FOR_LEASE_INTERFACE_NAMES,
  CREATOR,
  LABEL_CREATOR,
  LABEL_GUEST_CLUSTER_NAME,
  LABEL_MACHINE_SET_NAME,
  LABEL_NODE_POOL_NAME,
  LABEL_VM_NAME,
} from './labels.js';
import {
  CLOUD_INIT_DISK_NAME,
  diskName,
  machineSetName,
  namespacedName,
  nicName,
  nodePoolName,
  pvcName,
} from './names.js';
import type {
  Affinity,
  Disk,
  Interface,
  Network,
  PersistentVolumeClaim,
  Secret,
  VirtualMachine,
  Volume,
  WeightedPodAffinityTerm,
} from './types.js';
import { parseAffinity } from './affinity.js';
import { keyText } from '../api/object-key.js';

export const RUN_STRATEGY = 'RerunOnFailure';
export const EVICTION_STRATEGY = 'LiveMigrateIfPossible';
const HOSTNAME_TOPOLOGY = 'kubernetes.io/hostname';

/** A config that passed flag validation but still cannot become a VM (e.g. a hand-edited config.json). */
export class VmSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VmSpecError';
  }
}

export interface VmBuildContext {
  /** Content of the file named by --harvester-cloud-config (Rancher's install script). */
  cloudConfigContent?: string;
  /** Public key for the SSH user; defaults to the config's SSHPublicKey. */
  sshPublicKey?: string;
  /** 5 lowercase alphanumerics for a PVC name; called once per disk, in disk order. */
  random: () => string;
  /** `status.storageClassName` of the VirtualMachineImage "namespace/name", if it has one. */
  imageStorageClass: (imageId: string) => string | undefined;
  /** --harvester-cloud-init-in-secret. */
  cloudInitInSecret?: boolean;
  /** MACs pinned per interface (nic-<i>), over the ones --harvester-network-info gives. */
  macAddresses?: Readonly<Record<string, string>>;
  /** Network data in place of cfg.NetworkData (a fixed address's: fixed-network-data.ts). */
  networkData?: string;
  /** --harvester-vm-labels: on the VM and its template; checked before (user-metadata.ts). */
  userLabels?: Readonly<Record<string, string>>;
  /** --harvester-vm-annotations: on the VM and its template. */
  userAnnotations?: Readonly<Record<string, string>>;
  /** The driver's own annotations on the VM (the fixed address it holds). */
  vmAnnotations?: Readonly<Record<string, string>>;
}

export interface BuiltVirtualMachine {
  vm: VirtualMachine;
  /** Create after the VM, owned by it (withVmOwnerReference). */
  cloudInitSecret?: Secret;
}

/** One disk as the Go driver's addDisk sees it, after defaults. */
interface DiskRequest {
  name: string;
  /** cache, io, dedicatedIOThread: only those set. */
  storage: ReturnType<typeof diskStorageFields>;
  imageName: string;
  storageClassName: string;
  sizeGi: number;
  bootOrder: number;
  bus: string;
  type: string;
  hotPlugAble: boolean;
}

interface NicRequest {
  name: string;
  networkName: string;
  macAddress: string;
  model: string;
  type: string;
}

function diskRequests(cfg: GoDriverConfig): DiskRequest[] {
  const withDefaults = (d: GoDiskInfo['disks'][number], name: string): DiskRequest => ({
    name,
    imageName: d.imageName,
    storageClassName: d.storageClassName,
    sizeGi: d.size,
    bootOrder: d.bootOrder,
    // KubeVirt rejects a virtio CD-ROM; Go defaults every bus to virtio, so its CD-ROMs without a bus fail.
    bus: d.bus || (d.type === 'cd-rom' ? 'sata' : DEFAULT_DISK_BUS),
    type: d.type || 'disk',
    hotPlugAble: d.hotPlugAble,
    storage: diskStorageFields(d),
  });
  if (cfg.DiskInfo) return cfg.DiskInfo.disks.map((d, i) => withDefaults(d, diskName(i)));
  if (!/^\d+$/.test(cfg.DiskSize))
    throw new VmSpecError(`disk size "${cfg.DiskSize}" is not a whole number of GiB`);
  const legacy = {
    imageName: cfg.ImageName,
    storageClassName: '',
    size: Number(cfg.DiskSize),
    bootOrder: 1,
    bus: cfg.DiskBus,
    type: 'disk',
    hotPlugAble: false,
  };
  // The legacy single disk is disk-1 (not disk-0): the Go driver's numbering, kept for compatibility.
  return [withDefaults(legacy, diskName(1))];
}

function nicRequests(cfg: GoDriverConfig): NicRequest[] {
  const withDefaults = (n: GoNetworkInfo['interfaces'][number], name: string): NicRequest => ({
    name,
    networkName: n.networkName,
    macAddress: n.macAddress,
    model: n.model || DEFAULT_NETWORK_MODEL,
    type: n.type || 'bridge',
  });
  if (cfg.NetworkInfo) return cfg.NetworkInfo.interfaces.map((n, i) => withDefaults(n, nicName(i)));
  // Legacy flags: always a bridge; --harvester-network-type is stored but never used (as in Go).
  const legacy = { networkName: cfg.NetworkName, macAddress: '', model: cfg.NetworkModel, type: 'bridge' };
  return [withDefaults(legacy, nicName(0))];
}

function vmLabels(cfg: GoDriverConfig): Record<string, string> {
  const labels: Record<string, string> = {
    [LABEL_CREATOR]: CREATOR,
    [LABEL_VM_NAME]: cfg.MachineName,
    [LABEL_MACHINE_SET_NAME]: machineSetName(cfg.VMNamespace, cfg.MachineName),
  };
  if (cfg.ClusterName !== '') {
    labels[LABEL_GUEST_CLUSTER_NAME] = cfg.ClusterName;
    labels[LABEL_NODE_POOL_NAME] = nodePoolName(cfg.MachineName, cfg.ClusterName);
  }
  return labels;
}

/**
 * Without a user affinity: spread the driver's VMs over hosts (soft). With one: the
 * user's, plus a weight-1 term on this machine set appended to podAffinity and
 * podAntiAffinity where the user has them.
 */
function vmAffinity(cfg: GoDriverConfig, machineSet: string): Affinity {
  // As the Go driver: no affinity, or a JSON null, gets the builder's default.
  const parsed = cfg.VMAffinity === '' ? { value: null, problems: [] } : parseAffinity(cfg.VMAffinity);
  if (parsed.problems.length > 0) throw new VmSpecError(`VM affinity ${parsed.problems.join('; ')}`);
  if (!parsed.value) {
    return {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              labelSelector: { matchExpressions: [{ key: LABEL_CREATOR, operator: 'Exists' }] },
              topologyKey: HOSTNAME_TOPOLOGY,
            },
          },
        ],
      },
    };
  }
  const result = parsed.value;
  const machineSetTerm = (): WeightedPodAffinityTerm => ({
    weight: 1,
    podAffinityTerm: {
      labelSelector: { matchLabels: { [LABEL_MACHINE_SET_NAME]: machineSet } },
      topologyKey: HOSTNAME_TOPOLOGY,
    },
  });
  for (const rules of [result.podAffinity, result.podAntiAffinity]) {
    if (rules) {
      rules.preferredDuringSchedulingIgnoredDuringExecution = [
        ...(rules.preferredDuringSchedulingIgnoredDuringExecution ?? []),
        machineSetTerm(),
      ];
    }
  }
  return result;
}

interface DiskParts {
  disks: Disk[];
  volumes: Volume[];
  claimTemplates: PersistentVolumeClaim[];
}

function diskParts(cfg: GoDriverConfig, ctx: VmBuildContext): DiskParts {
  const parts: DiskParts = { disks: [], volumes: [], claimTemplates: [] };
  for (const d of diskRequests(cfg)) {
    const disk: Disk = { name: d.name };
    if (d.type === 'cd-rom') disk.cdrom = { bus: d.bus };
    else disk.disk = { bus: d.bus };
    if (d.bootOrder > 0) disk.bootOrder = d.bootOrder;
    Object.assign(disk, d.storage);
    parts.disks.push(disk);

    const claimName = pvcName(cfg.MachineName, d.name, ctx.random());
    const template: PersistentVolumeClaim = { metadata: { name: claimName }, spec: {} };
    let storageClassName = d.storageClassName;
    if (d.imageName !== '') {
      const image = namespacedName(d.imageName, cfg.VMNamespace);
      const imageId = keyText(image.namespace, image.name);
      const fromImage = ctx.imageStorageClass(imageId);
      if (!fromImage) {
        throw new VmSpecError(
          `image ${imageId} has no storage class yet (is it still downloading or failed?)`,
        );
      }
      storageClassName = fromImage;
      template.metadata.annotations = { [ANNOTATION_IMAGE_ID]: imageId };
    }
    template.spec = {
      accessModes: ['ReadWriteMany'],
      resources: { requests: { storage: `${d.sizeGi}Gi` } },
      storageClassName,
      volumeMode: 'Block',
    };
    parts.claimTemplates.push(template);

    const volume: Volume = { name: d.name, persistentVolumeClaim: { claimName } };
    if (d.hotPlugAble && volume.persistentVolumeClaim) volume.persistentVolumeClaim.hotpluggable = true;
    parts.volumes.push(volume);
  }
  return parts;
}

function nicParts(
  cfg: GoDriverConfig,
  pinned: Readonly<Record<string, string>> = {},
): { interfaces: Interface[]; networks: Network[] } {
  const interfaces: Interface[] = [];
  const networks: Network[] = [];
  for (const request of nicRequests(cfg)) {
    const n = { ...request, macAddress: pinned[request.name] ?? request.macAddress };
    const iface: Interface = { name: n.name, model: n.model };
    // Harvester's builder: "bridge" is a bridge, any other type is masquerade.
    if (n.type === 'bridge') iface.bridge = {};
    else iface.masquerade = {};
    if (n.macAddress !== '') iface.macAddress = n.macAddress;
    interfaces.push(iface);
    networks.push(
      n.networkName !== ''
        ? { name: n.name, multus: { networkName: n.networkName } }
        : { name: n.name, pod: {} },
    );
  }
  return { interfaces, networks };
}

/** The VM (and its cloud-init Secret, when one is needed) for a machine config. Throws VmSpecError or CloudInitError. */
export function buildVirtualMachine(cfg: GoDriverConfig, ctx: VmBuildContext): BuiltVirtualMachine {
  if (!Number.isInteger(cfg.CPU) || cfg.CPU < 1)
    throw new VmSpecError(`invalid number of CPU cores: ${cfg.CPU}`);
  const name = cfg.MachineName;
  const namespace = cfg.VMNamespace;
  // The operator's labels first: the driver's own always win (the checks refuse their keys anyway).
  const labels = { ...ctx.userLabels, ...vmLabels(cfg) };
  const machineSet = labels[LABEL_MACHINE_SET_NAME] ?? '';

  const userData = assembleUserData({
    sshUser: cfg.SSHUser,
    sshPassword: cfg.SSHPassword,
    sshPublicKey: ctx.sshPublicKey ?? cfg.SSHPublicKey,
    addUserToDockerGroup: cfg.AddUserToDockerGroup,
    userData: cfg.UserData,
    cloudConfigContent: ctx.cloudConfigContent,
  });
  const cloudInit = placeCloudInit({
    vmName: name,
    namespace,
    userData,
    networkData: ctx.networkData ?? cfg.NetworkData,
    // A password inline would be readable by anyone who may read the VM (and in its history).
    alwaysInSecret: (ctx.cloudInitInSecret ?? false) || cfg.SSHPassword !== '',
    labels: { [LABEL_CREATOR]: CREATOR, [LABEL_VM_NAME]: name },
  });

  const { disks, volumes, claimTemplates } = diskParts(cfg, ctx);
  const { interfaces, networks } = nicParts(cfg, ctx.macAddresses);

  const annotations: Record<string, string> = { ...ctx.userAnnotations, ...ctx.vmAnnotations };
  if (cfg.ReservedMemorySize !== '') annotations[ANNOTATION_RESERVED_MEMORY] = cfg.ReservedMemorySize;
  annotations[ANNOTATION_VOLUME_CLAIM_TEMPLATES] = JSON.stringify(claimTemplates);

  const vm: VirtualMachine = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace, labels, annotations },
    spec: {
      runStrategy: RUN_STRATEGY,
      template: {
        metadata: {
          labels: { ...labels },
          annotations: {
            ...ctx.userAnnotations,
            [ANNOTATION_SSH_NAMES]: JSON.stringify(cfg.KeyPairName !== '' ? [cfg.KeyPairName] : []),
            [ANNOTATION_WAIT_FOR_LEASE_INTERFACE_NAMES]: '[]',
          },
        },
        spec: {
          evictionStrategy: EVICTION_STRATEGY,
          domain: {
            cpu: { cores: cfg.CPU, sockets: 1, threads: 1 },
            resources: { limits: { cpu: String(cfg.CPU), memory: cfg.MemorySize } },
            devices: {
              disks: [{ name: CLOUD_INIT_DISK_NAME, disk: { bus: 'virtio' } }, ...disks],
              interfaces,
            },
          },
          affinity: vmAffinity(cfg, machineSet),
          networks,
          volumes: [{ name: CLOUD_INIT_DISK_NAME, cloudInitNoCloud: cloudInit.source }, ...volumes],
        },
      },
    },
  };
  applyDomainOptions(vm, cfg);
  return cloudInit.secret ? { vm, cloudInitSecret: cloudInit.secret } : { vm };
}

/** vGPU and host devices, TPM, EFI/secure boot, CPU pinning and model, I/O threads: the optional parts of the domain. */
function applyDomainOptions(vm: VirtualMachine, cfg: GoDriverConfig): void {
  const domain = vm.spec.template.spec.domain;
  const cpu = domain.cpu ?? {};
  // Harvester's builder adds vGPUs as host devices (name, deviceName); an empty name gets
  // one from its device, or two of them would share a libvirt alias and never start.
  // Passed-through PCI and USB devices follow them, with no node affinity (the scheduler
  // places the VM by the devices' resources).
  const vgpuNames = cfg.VGPUInfo ? vgpuDeviceNames(cfg.VGPUInfo) : [];
  const hostDevices = [
    ...(cfg.VGPUInfo?.vGPURequests ?? []).map((r, i) => ({
      name: vgpuNames[i] ?? r.name,
      deviceName: r.deviceName,
    })),
    ...hostDeviceEntries(cfg.HostDeviceInfo),
  ];
  if (hostDevices.length > 0) domain.devices.hostDevices = hostDevices;
  if (cfg.EnableTPM) domain.devices.tpm = {};
  if (cfg.EnableEFI) {
    // SMM is what secure boot needs; Go sets both from the secure-boot flag.
    domain.features = { smm: { enabled: cfg.EnableSecureBoot } };
    domain.firmware = { bootloader: { efi: { secureBoot: cfg.EnableSecureBoot } } };
  }
  if (cfg.CPUPinning) cpu.dedicatedCpuPlacement = true;
  if (cfg.IsolateEmulatorThread) cpu.isolateEmulatorThread = true;
  if (cfg.CPUModel !== '') cpu.model = cfg.CPUModel;
  domain.cpu = cpu;
  applyIoThreadOptions(domain, cfg);
}
