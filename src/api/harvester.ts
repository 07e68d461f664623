// Harvester's own objects (harvesterhci.io v1beta1) the driver and the stand-ins share.
import type { Condition, KubeObject } from './meta.js';

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
    conditions?: Condition[];
    [field: string]: unknown;
  };
}

export interface KeyPair extends KubeObject {
  spec: { publicKey: string };
  status?: { fingerPrint?: string; conditions?: Condition[]; [field: string]: unknown };
}
