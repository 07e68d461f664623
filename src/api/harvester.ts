// Harvester's own objects the driver and the stand-ins share: harvesterhci.io v1beta1 and the
// pcidevices add-on's devices.harvesterhci.io v1beta1 (harvester/pcidevices v1.8.0 pkg/apis).
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

export interface PciDevice extends KubeObject {
  spec?: Record<string, never>;
  status?: {
    address?: string;
    vendorId?: string;
    deviceId?: string;
    classId?: string;
    iommuGroup?: string;
    nodeName?: string;
    resourceName?: string;
    description?: string;
    kernelDriverInUse?: string;
  };
}

export interface PciDeviceClaim extends KubeObject {
  spec?: { address?: string; nodeName?: string; userName?: string };
  status?: { kernelDriverToUnbind?: string; passthroughEnabled?: boolean };
}

export interface UsbDevice extends KubeObject {
  status?: {
    vendorID?: string;
    productID?: string;
    nodeName?: string;
    resourceName?: string;
    devicePath?: string;
    description?: string;
    pciAddress?: string;
    enabled?: boolean;
    status?: string;
    message?: string;
  };
}

export interface UsbDeviceClaim extends KubeObject {
  spec?: { userName?: string };
  status?: { nodeName?: string; pciAddress?: string };
}
