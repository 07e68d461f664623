// The pcidevices add-on's objects, under the names the stand-ins use: the project's one model
// (src/api/harvester.ts).
export type {
  PciDevice as PciDeviceObject,
  PciDeviceClaim as PciDeviceClaimObject,
  UsbDevice as UsbDeviceObject,
  UsbDeviceClaim as UsbDeviceClaimObject,
} from '../../../src/api/harvester.js';
