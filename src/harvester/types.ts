// The slices of Kubernetes, KubeVirt and Harvester objects the driver builds or reads,
// as plain JSON-shaped interfaces (the JSON names of kubevirt.io/api v1 and core/v1).
// Only what we use is typed; objects from a server may carry more.

import type { ObjectMeta } from '../api/meta.js';

export type { ObjectMeta, OwnerReference } from '../api/meta.js';

// ---- affinity (core/v1) ----

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

export interface PodAffinityTerm {
  labelSelector?: LabelSelector;
  topologyKey: string;
  namespaces?: string[];
  namespaceSelector?: LabelSelector;
}

export interface WeightedPodAffinityTerm {
  weight: number;
  podAffinityTerm: PodAffinityTerm;
}

export interface PodAffinityRules {
  requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
  preferredDuringSchedulingIgnoredDuringExecution?: WeightedPodAffinityTerm[];
}

export interface Affinity {
  nodeAffinity?: Record<string, unknown>;
  podAffinity?: PodAffinityRules;
  podAntiAffinity?: PodAffinityRules;
}

// ---- KubeVirt VirtualMachine ----

export interface DiskTarget {
  bus?: string;
}

export interface Disk {
  name: string;
  disk?: DiskTarget;
  cdrom?: DiskTarget;
  lun?: DiskTarget;
  bootOrder?: number;
}

export interface Interface {
  name: string;
  model?: string;
  macAddress?: string;
  bridge?: Record<string, never>;
  masquerade?: Record<string, never>;
  bootOrder?: number;
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
  tpm?: Record<string, never>;
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
}

export interface Network {
  name: string;
  multus?: { networkName: string; default?: boolean };
  pod?: Record<string, never>;
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
}

export interface VirtualMachineInstanceSpec {
  evictionStrategy?: string;
  domain: DomainSpec;
  affinity?: Affinity;
  networks?: Network[];
  volumes?: Volume[];
}

export interface VirtualMachineInstanceTemplateSpec {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: VirtualMachineInstanceSpec;
}

export interface VirtualMachine {
  apiVersion: 'kubevirt.io/v1';
  kind: 'VirtualMachine';
  metadata: ObjectMeta;
  spec: {
    runStrategy?: string;
    running?: boolean;
    template: VirtualMachineInstanceTemplateSpec;
  };
  status?: { printableStatus?: string; ready?: boolean; created?: boolean; conditions?: Condition[] };
}

/** A KubeVirt (or core/v1) status condition. */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

// ---- KubeVirt VirtualMachineInstance ----

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
}

export interface VMIVolumeStatus {
  name: string;
  target?: string;
  phase?: string;
  persistentVolumeClaimInfo?: { claimName?: string };
  hotplugVolume?: { attachPodName?: string; attachPodUID?: string };
}

export interface VirtualMachineInstance {
  apiVersion?: 'kubevirt.io/v1';
  kind?: 'VirtualMachineInstance';
  metadata: ObjectMeta;
  spec?: { volumes?: Volume[] };
  status?: {
    phase?: VMIPhase;
    conditions?: Condition[];
    interfaces?: VMINetworkInterfaceStatus[];
    volumeStatus?: VMIVolumeStatus[];
  };
}

// ---- core/v1 ----

export interface PersistentVolumeClaimSpec {
  accessModes?: string[];
  resources?: { requests?: Record<string, string> };
  storageClassName?: string;
  volumeMode?: string;
  volumeName?: string;
}

export interface PersistentVolumeClaim {
  apiVersion?: 'v1';
  kind?: 'PersistentVolumeClaim';
  metadata: ObjectMeta;
  spec?: PersistentVolumeClaimSpec;
  status?: { phase?: string };
}

export interface Secret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  type?: string;
  /** Values base64-encoded, as the API server stores them. */
  data?: Record<string, string>;
}
