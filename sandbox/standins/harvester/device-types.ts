// The pcidevices add-on's objects as the stand-ins read and write them
// (harvester/pcidevices v1.8.0 pkg/apis/devices.harvesterhci.io/v1beta1).
import type { KubeObject } from '../../../src/kube/resources.js';

export interface PciDeviceObject extends KubeObject {
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

export interface PciDeviceClaimObject extends KubeObject {
  spec?: { address?: string; nodeName?: string; userName?: string };
  status?: { kernelDriverToUnbind?: string; passthroughEnabled?: boolean };
}

export interface UsbDeviceObject extends KubeObject {
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

export interface UsbDeviceClaimObject extends KubeObject {
  spec?: { userName?: string };
  status?: { nodeName?: string; pciAddress?: string };
}
