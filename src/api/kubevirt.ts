// KubeVirt's objects (kubevirt.io/api v1), the one definition of them for the driver, the
// controller and the stand-ins: the JSON names, only the fields someone reads or writes;
// index signatures keep what a server sent and we do not name.
import type { Affinity } from './core.js';
import type { Condition, KubeObject } from './meta.js';

export interface DiskTarget {
  bus?: string;
}

export interface Disk {
  name: string;
  disk?: DiskTarget;
  cdrom?: DiskTarget;
  lun?: DiskTarget;
  bootOrder?: number;
  /** Host page-cache mode: none, writethrough or writeback. */
  cache?: string;
  /** QEMU's I/O mode: native or threads. */
  io?: string;
  dedicatedIOThread?: boolean;
  [field: string]: unknown;
}

export interface Interface {
  name: string;
  model?: string;
  macAddress?: string;
  bridge?: Record<string, never>;
  masquerade?: Record<string, never>;
  bootOrder?: number;
  [field: string]: unknown;
}

export interface HostDevice {
  name: string;
  deviceName: string;
  tag?: string;
}

export interface Devices {
  disks?: Disk[];
  interfaces?: Interface[];
  hostDevices?: HostDevice[];
  blockMultiQueue?: boolean;
  tpm?: Record<string, never>;
  [field: string]: unknown;
}

export interface CPU {
  cores?: number;
  sockets?: number;
  threads?: number;
  model?: string;
  dedicatedCpuPlacement?: boolean;
  isolateEmulatorThread?: boolean;
}

export interface DomainSpec {
  cpu?: CPU;
  memory?: { guest?: string };
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
  devices: Devices;
  features?: { smm?: { enabled?: boolean } };
  firmware?: { bootloader?: { efi?: { secureBoot?: boolean } } };
  ioThreadsPolicy?: string;
  ioThreads?: { supplementalPoolThreadCount?: number };
  [field: string]: unknown;
}

export interface Network {
  name: string;
  multus?: { networkName: string; default?: boolean };
  pod?: Record<string, never>;
  [field: string]: unknown;
}

export interface LocalObjectReference {
  name: string;
}

export interface CloudInitSource {
  userData?: string;
  userDataBase64?: string;
  secretRef?: LocalObjectReference;
  networkData?: string;
  networkDataBase64?: string;
  networkDataSecretRef?: LocalObjectReference;
}

export interface Volume {
  name: string;
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean; hotpluggable?: boolean };
  dataVolume?: { name: string; hotpluggable?: boolean };
  cloudInitNoCloud?: CloudInitSource;
  cloudInitConfigDrive?: CloudInitSource;
  containerDisk?: { image: string };
  [source: string]: unknown;
}

export interface VirtualMachineInstanceSpec {
  evictionStrategy?: string;
  domain: DomainSpec;
  affinity?: Affinity;
  networks?: Network[];
  volumes?: Volume[];
  [field: string]: unknown;
}

export interface VirtualMachineInstanceTemplateSpec {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: VirtualMachineInstanceSpec;
}

export type RunStrategy = 'Always' | 'RerunOnFailure' | 'Manual' | 'Halted' | 'Once' | 'WaitAsReceiver';

export interface StateChangeRequest {
  /** Start or Stop. */
  action: string;
  uid?: string;
  data?: Record<string, string>;
}

export interface VirtualMachineStatus {
  created?: boolean;
  ready?: boolean;
  printableStatus?: string;
  runStrategy?: string;
  conditions?: Condition[];
  stateChangeRequests?: StateChangeRequest[];
  observedGeneration?: number;
  desiredGeneration?: number;
  [field: string]: unknown;
}

export interface VirtualMachine extends KubeObject {
  apiVersion: 'kubevirt.io/v1';
  kind: 'VirtualMachine';
  spec: {
    runStrategy?: RunStrategy;
    running?: boolean;
    template: VirtualMachineInstanceTemplateSpec;
    [field: string]: unknown;
  };
  status?: VirtualMachineStatus;
}

export type VMIPhase =
  | ''
  | 'Pending'
  | 'Scheduling'
  | 'Scheduled'
  | 'Running'
  | 'Succeeded'
  | 'Failed'
  | 'Unknown'
  | 'WaitingForSync';

export interface VMINetworkInterfaceStatus {
  /** Name of the VM spec interface (nic-0 …); empty for interfaces only the guest agent sees. */
  name?: string;
  ipAddress?: string;
  ipAddresses?: string[];
  mac?: string;
  interfaceName?: string;
  infoSource?: string;
  queueCount?: number;
  linkState?: string;
}

export interface VMIVolumeStatus {
  name: string;
  target?: string;
  phase?: string;
  reason?: string;
  message?: string;
  persistentVolumeClaimInfo?: { claimName?: string; [field: string]: unknown };
  hotplugVolume?: { attachPodName?: string; attachPodUID?: string };
  [field: string]: unknown;
}

export interface VirtualMachineInstanceStatus {
  phase?: VMIPhase;
  nodeName?: string;
  conditions?: Condition[];
  interfaces?: VMINetworkInterfaceStatus[];
  volumeStatus?: VMIVolumeStatus[];
  phaseTransitionTimestamps?: Array<{ phase: string; phaseTransitionTimestamp: string }>;
  activePods?: Record<string, string>;
  [field: string]: unknown;
}

export interface VirtualMachineInstance extends KubeObject {
  apiVersion?: 'kubevirt.io/v1';
  kind?: 'VirtualMachineInstance';
  spec: VirtualMachineInstanceSpec;
  status?: VirtualMachineInstanceStatus;
}

export interface PciHostDevice {
  pciVendorSelector: string;
  resourceName: string;
  externalResourceProvider?: boolean;
}

export interface UsbHostDevice {
  resourceName: string;
  selectors: Array<{ vendor: string; product: string }>;
  externalResourceProvider?: boolean;
}

export interface PermittedHostDevices {
  pciHostDevices?: PciHostDevice[];
  mediatedDevices?: Array<{ mdevNameSelector: string; resourceName: string }>;
  usb?: UsbHostDevice[];
}

/** The KubeVirt CR (one per cluster: Harvester's is harvester-system/kubevirt). */
export interface KubeVirt extends KubeObject {
  spec: {
    configuration?: {
      permittedHostDevices?: PermittedHostDevices;
      developerConfiguration?: { featureGates?: string[] };
      [k: string]: unknown;
    };
    [k: string]: unknown;
  };
  status?: { phase?: string; [k: string]: unknown };
}
