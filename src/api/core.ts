// The core/v1 (and storage/v1) objects the driver, the controller and the stand-ins share:
// the JSON names, only the fields someone reads or writes.
import type { Condition, KubeObject } from './meta.js';

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

export interface PersistentVolumeClaimSpec {
  accessModes?: string[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  storageClassName?: string;
  volumeMode?: string;
  volumeName?: string;
  [field: string]: unknown;
}

export interface PersistentVolumeClaim extends KubeObject {
  apiVersion?: 'v1';
  kind?: 'PersistentVolumeClaim';
  spec: PersistentVolumeClaimSpec;
  status?: {
    phase?: string;
    capacity?: Record<string, string>;
    accessModes?: string[];
    [field: string]: unknown;
  };
}

/** A guest cluster's volume; a CSI one names its driver and the volume's id there. */
export interface PersistentVolume extends KubeObject {
  apiVersion?: 'v1';
  kind?: 'PersistentVolume';
  spec: {
    csi?: {
      driver: string;
      volumeHandle: string;
      fsType?: string;
      volumeAttributes?: Record<string, string>;
    };
    claimRef?: { namespace?: string; name?: string; uid?: string; kind?: string; apiVersion?: string };
    capacity?: Record<string, string>;
    accessModes?: string[];
    persistentVolumeReclaimPolicy?: string;
    storageClassName?: string;
    volumeMode?: string;
    [field: string]: unknown;
  };
  status?: { phase?: string; [field: string]: unknown };
}

export interface Secret extends KubeObject {
  apiVersion?: 'v1';
  kind?: 'Secret';
  type?: string;
  /** Values base64-encoded, as the API server stores them. */
  data?: Record<string, string>;
  stringData?: Record<string, string>;
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

export interface PersistentVolume extends KubeObject {
  apiVersion?: 'v1';
  kind?: 'PersistentVolume';
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

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

/** A Node condition: the kubelet also stamps its heartbeat. */
export interface NodeCondition extends Condition {
  lastHeartbeatTime?: string;
}

export interface Node extends KubeObject {
  apiVersion?: 'v1';
  kind?: 'Node';
  spec?: { unschedulable?: boolean; taints?: Taint[]; [field: string]: unknown };
  status?: {
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    conditions?: NodeCondition[];
    addresses?: Array<{ type: string; address: string }>;
    [field: string]: unknown;
  };
}
