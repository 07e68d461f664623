// What the pcidevices add-on's node agent finds on a node and writes: one PCIDevice per PCI
// function and one USBDevice per USB device, named and labelled as harvester/pcidevices
// v1.8.0 names them (pkg/apis/devices.harvesterhci.io/v1beta1/pcidevice.go,
// pkg/controller/usbdevice/usbdevice_controller.go). The sandbox has no hardware: the
// devices are given, as a node's lspci and lsusb would list them.
import type { KubeClient } from '../../../src/kube/client.js';
import { isAlreadyExists } from '../../../src/kube/errors.js';
import { Resources } from '../../../src/kube/resources.js';
import { SANDBOX_NODE } from '../names.js';
import type { PciDeviceObject, UsbDeviceObject } from './device-types.js';

export const LABEL_NODE_NAME = 'nodename';
export const ANNOTATION_PCI_DEVICE_DRIVER = 'harvesterhci.io/pcideviceDriver';
const PLUGIN_SOCKET_PREFIX = '/var/lib/kubelet/device-plugins/kubevirt-';
const SOCKET_PATH_LIMIT = 108;

export interface PciFunction {
  node: string;
  /** "0000:3b:00.0" */
  address: string;
  vendorId: string;
  deviceId: string;
  /** As in the PCI ID database: "NVIDIA Corporation". */
  vendorName: string;
  /** "TU104GL [Tesla T4]"; "" when the database does not know the device. */
  productName: string;
  /** class + subclass, "0302" */
  classId: string;
  className: string;
  /** The kernel driver bound now ("" when none). */
  driver: string;
  iommuGroup: string;
}

export interface UsbFunction {
  node: string;
  vendorId: string;
  productId: string;
  /** "/dev/bus/usb/001/002" */
  devicePath: string;
  description: string;
  /** The PCI address of the USB controller it hangs off. */
  pciAddress: string;
}

/** PCIDeviceNameForHostname: "<node>-<address without : and .>". */
export function pciDeviceName(node: string, address: string): string {
  return `${node}-${address.replace(/[:.]/g, '')}`;
}

const strip = (s: string): string => s.replace(/[^a-zA-Z0-9]+/g, '');

/** resourceName(): "<vendor>.com/<PRODUCT>", what KubeVirt schedules the VM by. */
export function pciResourceName(f: Pick<PciFunction, 'vendorName' | 'productName' | 'deviceId'>): string {
  const bracketed = /\[([^\]]+)\]/.exec(f.vendorName)?.[1];
  const vendorBase = bracketed
    ? strip(bracketed.split('/')[0] ?? '')
    : strip(f.vendorName.split(' ')[0] ?? '');
  const vendor = `${vendorBase.toLowerCase()}.com`;
  if (f.productName === '') return `${vendor}/${f.deviceId}`;
  let product = f.productName.trim().toUpperCase().replaceAll('/', '_').replaceAll('.', '_');
  product = product.replace(/\s+/g, '_').replace(/[^a-zA-Z0-9_.]+/g, '');
  // The device plugin's socket path is limited; long names become the device ID.
  for (;;) {
    if (`${PLUGIN_SOCKET_PREFIX}/${vendor}-${product}.sock`.length <= SOCKET_PATH_LIMIT)
      return `${vendor}/${product}`;
    if (!product.includes('VIRTUAL_FUNCTION')) return `${vendor}/${f.deviceId}`;
    product = product.replaceAll('VIRTUAL_FUNCTION', 'VF');
  }
}

/** usbDeviceName(): "<node>-<vendor>-<product>-<bus and device numbers>". */
export function usbDeviceName(
  f: Pick<UsbFunction, 'node' | 'vendorId' | 'productId' | 'devicePath'>,
): string {
  const path = f.devicePath.replace('/dev/bus/usb/', '').split('/').join('');
  return `${f.node}-${f.vendorId}-${f.productId}-${path}`;
}

async function createWithStatus<T extends PciDeviceObject | UsbDeviceObject>(
  client: KubeClient,
  type: typeof Resources.pciDevice,
  obj: T,
): Promise<void> {
  try {
    const made = await client.create<T>(type, obj);
    // status is a subresource: the agent writes it in a second call, as wrangler's UpdateStatus.
    await client.update<T>(type, { ...made, status: obj.status }, 'status');
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

export async function discoverPciDevice(client: KubeClient, f: PciFunction): Promise<PciDeviceObject> {
  const obj: PciDeviceObject = {
    apiVersion: 'devices.harvesterhci.io/v1beta1',
    kind: 'PCIDevice',
    metadata: {
      name: pciDeviceName(f.node, f.address),
      labels: { [LABEL_NODE_NAME]: f.node },
      annotations: { [ANNOTATION_PCI_DEVICE_DRIVER]: f.driver },
    },
    spec: {},
    status: {
      address: f.address,
      vendorId: f.vendorId,
      deviceId: f.deviceId,
      classId: f.classId,
      iommuGroup: f.iommuGroup,
      nodeName: f.node,
      resourceName: pciResourceName(f),
      description: `${f.className}: ${f.vendorName} ${f.productName || `Device ${f.deviceId}`}`,
      kernelDriverInUse: f.driver,
    },
  };
  await createWithStatus(client, Resources.pciDevice, obj);
  return obj;
}

export async function discoverUsbDevice(client: KubeClient, f: UsbFunction): Promise<UsbDeviceObject> {
  const name = usbDeviceName(f);
  const obj: UsbDeviceObject = {
    apiVersion: 'devices.harvesterhci.io/v1beta1',
    kind: 'USBDevice',
    metadata: { name, labels: { [LABEL_NODE_NAME]: f.node } },
    status: {
      vendorID: f.vendorId,
      productID: f.productId,
      nodeName: f.node,
      resourceName: `kubevirt.io/${name}`,
      devicePath: f.devicePath,
      description: f.description,
      pciAddress: f.pciAddress,
      enabled: false,
    },
  };
  await createWithStatus(client, Resources.usbDevice, obj);
  return obj;
}

/** The sandbox node's hardware: two GPUs of one model, a NIC, a USB stick; nothing enabled. */
export const SANDBOX_PCI: readonly PciFunction[] = [
  {
    node: SANDBOX_NODE,
    address: '0000:3b:00.0',
    vendorId: '10de',
    deviceId: '1eb8',
    vendorName: 'NVIDIA Corporation',
    productName: 'TU104GL [Tesla T4]',
    classId: '0302',
    className: '3D controller',
    driver: 'nouveau',
    iommuGroup: '60',
  },
  {
    node: SANDBOX_NODE,
    address: '0000:af:00.0',
    vendorId: '10de',
    deviceId: '1eb8',
    vendorName: 'NVIDIA Corporation',
    productName: 'TU104GL [Tesla T4]',
    classId: '0302',
    className: '3D controller',
    driver: 'nouveau',
    iommuGroup: '151',
  },
  {
    node: SANDBOX_NODE,
    address: '0000:18:00.1',
    vendorId: '8086',
    deviceId: '1572',
    vendorName: 'Intel Corporation',
    productName: 'Ethernet Controller X710 for 10GbE SFP+',
    classId: '0200',
    className: 'Ethernet controller',
    driver: 'i40e',
    iommuGroup: '33',
  },
];

export const SANDBOX_USB: readonly UsbFunction[] = [
  {
    node: SANDBOX_NODE,
    vendorId: '0951',
    productId: '1666',
    devicePath: '/dev/bus/usb/001/002',
    description: 'DataTraveler 100 G3/G4/SE9 G2/50 Kyson (Kingston Technology)',
    pciAddress: '0000:00:14.0',
  },
];

/**
 * vGPUs are not played as objects (no SR-IOV GPU or VGPUDevice kinds): the sandbox node just
 * offers what an NVIDIA A2 split into vGPUs would, two of each of two types, as the vGPU
 * device plugin makes a node offer `nvidia.com/<type>` per enabled vGPU, so a VM asking for
 * them (--harvester-vgpu-info) schedules and one asking for a third does not.
 */
export const SANDBOX_VGPUS: ReadonlyArray<{ resourceName: string; device: string }> = [
  'NVIDIA_A2-1Q',
  'NVIDIA_A2-1Q',
  'NVIDIA_A2-2Q',
  'NVIDIA_A2-2Q',
].map((type, i) => ({
  resourceName: `nvidia.com/${type}`,
  device: pciDeviceName(SANDBOX_NODE, `0000:d8:00.${4 + i}`),
}));

export async function discoverSandboxDevices(client: KubeClient): Promise<void> {
  for (const f of SANDBOX_PCI) await discoverPciDevice(client, f);
  for (const f of SANDBOX_USB) await discoverUsbDevice(client, f);
}
