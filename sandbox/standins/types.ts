// The shapes of the objects the stand-ins read and write: only the fields they touch,
// everything else is carried through untouched (the CRDs preserve unknown fields).
import type { KubeObject } from '../../src/kube/resources.js';

export type RunStrategy = 'Always' | 'RerunOnFailure' | 'Manual' | 'Halted' | 'Once' | 'WaitAsReceiver';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastProbeTime?: string | null;
  lastTransitionTime?: string | null;
  lastUpdateTime?: string;
}

export interface PvcVolumeSource {
  claimName: string;
  hotpluggable?: boolean;
  readOnly?: boolean;
}

export interface Volume {
  name: string;
  persistentVolumeClaim?: PvcVolumeSource;
  dataVolume?: { name: string; hotpluggable?: boolean };
  [source: string]: unknown;
}

export interface Disk {
  name: string;
  disk?: { bus?: string };
  cdrom?: { bus?: string };
  lun?: { bus?: string };
  bootOrder?: number;
  [field: string]: unknown;
}

export interface Interface {
  name: string;
  macAddress?: string;
  [field: string]: unknown;
}

export interface VmiSpec {
  domain: {
    devices?: { disks?: Disk[]; interfaces?: Interface[]; [k: string]: unknown };
    [k: string]: unknown;
  };
  volumes?: Volume[];
  networks?: Array<{ name: string; [k: string]: unknown }>;
  [field: string]: unknown;
}

export interface StateChangeRequest {
  /** Start or Stop. */
  action: string;
  uid?: string;
  data?: Record<string, string>;
}

export interface VmStatus {
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
  spec: {
    runStrategy?: RunStrategy;
    running?: boolean;
    template: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: VmiSpec;
    };
    [field: string]: unknown;
  };
  status?: VmStatus;
}

export interface VmiInterfaceStatus {
  name?: string;
  mac?: string;
  ipAddress?: string;
  ipAddresses?: string[];
  interfaceName?: string;
  infoSource?: string;
  queueCount?: number;
  linkState?: string;
}

export interface VolumeStatus {
  name: string;
  target: string;
  phase?: string;
  reason?: string;
  message?: string;
  hotplugVolume?: { attachPodName?: string; attachPodUID?: string };
  persistentVolumeClaimInfo?: Record<string, unknown>;
  [field: string]: unknown;
}

export type VmiPhase =
  '' | 'Pending' | 'Scheduling' | 'Scheduled' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface VmiStatus {
  phase?: VmiPhase;
  nodeName?: string;
  conditions?: Condition[];
  interfaces?: VmiInterfaceStatus[];
  volumeStatus?: VolumeStatus[];
  phaseTransitionTimestamps?: Array<{ phase: string; phaseTransitionTimestamp: string }>;
  activePods?: Record<string, string>;
  [field: string]: unknown;
}

export interface VirtualMachineInstance extends KubeObject {
  spec: VmiSpec;
  status?: VmiStatus;
}

export interface PersistentVolumeClaim extends KubeObject {
  spec: {
    accessModes?: string[];
    volumeMode?: string;
    storageClassName?: string;
    volumeName?: string;
    resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
    [field: string]: unknown;
  };
  status?: {
    phase?: string;
    capacity?: Record<string, string>;
    accessModes?: string[];
    [field: string]: unknown;
  };
}

export interface PersistentVolume extends KubeObject {
  spec: {
    capacity?: Record<string, string>;
    accessModes?: string[];
    volumeMode?: string;
    storageClassName?: string;
    persistentVolumeReclaimPolicy?: string;
    claimRef?: { apiVersion?: string; kind?: string; namespace?: string; name?: string; uid?: string };
    csi?: {
      driver: string;
      volumeHandle: string;
      fsType?: string;
      volumeAttributes?: Record<string, string>;
    };
    [field: string]: unknown;
  };
  status?: { phase?: string; [field: string]: unknown };
}

export interface StorageClass extends KubeObject {
  provisioner: string;
  allowVolumeExpansion?: boolean;
  reclaimPolicy?: string;
  volumeBindingMode?: string;
  parameters?: Record<string, string>;
}

export interface Pod extends KubeObject {
  spec: {
    nodeName?: string;
    containers: Array<{ name: string; image: string; [k: string]: unknown }>;
    volumes?: Array<{ name: string; persistentVolumeClaim?: { claimName: string }; [k: string]: unknown }>;
    [field: string]: unknown;
  };
  status?: {
    phase?: string;
    conditions?: Condition[];
    containerStatuses?: Array<{ name: string; ready: boolean; [k: string]: unknown }>;
    [field: string]: unknown;
  };
}

export interface HarvesterCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

export interface VirtualMachineImage extends KubeObject {
  spec: {
    displayName: string;
    sourceType: string;
    url?: string;
    backend?: string;
    targetStorageClassName?: string;
    storageClassParameters?: Record<string, string>;
    [field: string]: unknown;
  };
  status?: {
    appliedUrl?: string;
    progress?: number;
    size?: number;
    virtualSize?: number;
    storageClassName?: string;
    failed?: number;
    conditions?: HarvesterCondition[];
    [field: string]: unknown;
  };
}

export interface KeyPair extends KubeObject {
  spec: { publicKey: string };
  status?: { fingerPrint?: string; conditions?: HarvesterCondition[]; [field: string]: unknown };
}
