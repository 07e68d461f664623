// The pcidevices add-on's stand-in: claims enable passthrough, a launcher pod is scheduled
// only where its device resource is offered and free, and the VM records what it got.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources } from '../../src/kube/resources.js';
import {
  discoverPciDevice,
  discoverUsbDevice,
  pciDeviceName,
  pciResourceName,
  SANDBOX_PCI,
  SANDBOX_USB,
} from './harvester/device-discovery.js';
import type {
  PciDeviceClaimObject,
  PciDeviceObject,
  UsbDeviceClaimObject,
  UsbDeviceObject,
} from './harvester/device-types.js';
import {
  ANNOTATION_DEVICE_ALLOCATION,
  FINALIZER_PCI_CLAIM,
  FINALIZER_USB_CLAIM,
  VFIO_PCI,
} from './harvester/pcidevices-controller.js';
import { createNamespace } from '../control-plane/access.js';
import type { KubeVirt as KubeVirtCr } from '../../src/api/kubevirt.js';
import { KubeVirtResources } from '../kubevirt/resources.js';
import { KUBEVIRT_CR, KUBEVIRT_NAMESPACE } from '../kubevirt/version.js';
import { ExtraResources, SANDBOX_NODE } from './names.js';
import { driverVm, gone, useHarvester, waitUntil } from './testing.js';
import type { Pod, VirtualMachine, VirtualMachineInstance } from './types.js';

/** The claim the Harvester UI's "Enable Passthrough" creates (EnablePciPassthrough.vue). */
function uiClaim(device: PciDeviceObject, owned = true): PciDeviceClaimObject {
  return {
    apiVersion: 'devices.harvesterhci.io/v1beta1',
    kind: 'PCIDeviceClaim',
    metadata: {
      name: device.metadata.name,
      ...(owned
        ? {
            ownerReferences: [
              {
                apiVersion: 'devices.harvesterhci.io/v1beta1',
                kind: 'PCIDevice',
                name: device.metadata.name,
                uid: device.metadata.uid ?? '',
              },
            ],
          }
        : {}),
    },
    spec: {
      address: device.status?.address ?? '',
      nodeName: device.status?.nodeName ?? '',
      userName: 'admin',
    },
  };
}

function withHostDevices(
  vm: VirtualMachine,
  hostDevices: Array<{ name: string; deviceName: string }>,
): VirtualMachine {
  const devices = vm.spec.template.spec.domain.devices ?? {};
  vm.spec.template.spec.domain.devices = { ...devices, hostDevices };
  return vm;
}

const T4 = SANDBOX_PCI[0];
const T4_SECOND = SANDBOX_PCI[1];
const NIC = SANDBOX_PCI[2];

/** virt-controller's refusal to render a VM whose device permittedHostDevices does not list. */
async function assertNotPermitted(
  client: KubeClient,
  ns: string,
  name: string,
  resource: string,
): Promise<void> {
  // The vGPUs' claims made permittedHostDevices a list: a device not on it is refused by
  // virt-controller when it renders the launcher pod (services/renderresources.go).
  const refused = await waitUntil<VirtualMachineInstance>(
    client,
    Resources.virtualMachineInstance,
    { namespace: ns, name },
    'Synchronized=False',
    (v) => v?.status?.conditions?.some((c) => c.type === 'Synchronized' && c.status === 'False') ?? false,
  );
  const synchronized = refused?.status?.conditions?.find((c) => c.type === 'Synchronized');
  assert.equal(refused?.status?.phase, 'Pending');
  assert.equal(synchronized?.reason, 'FailedCreate');
  assert.equal(
    synchronized?.message,
    `failed to render launch manifest: HostDevice ${resource} is not permitted in permittedHostDevices configuration`,
  );
  assert.equal((await client.list<Pod>(ExtraResources.pod, { namespace: ns })).items.length, 0);
}

/** The pcidevices add-on's entry in the KubeVirt CR. */
async function assertPermitted(client: KubeClient, resource: string, vendorSelector: string): Promise<void> {
  const kubevirt = await client.get<KubeVirtCr>(KubeVirtResources.kubeVirt, {
    namespace: KUBEVIRT_NAMESPACE,
    name: KUBEVIRT_CR,
  });
  assert.deepEqual(
    kubevirt.spec.configuration?.permittedHostDevices?.pciHostDevices?.find(
      (d) => d.resourceName === resource,
    ),
    { pciVendorSelector: vendorSelector, resourceName: resource, externalResourceProvider: true },
  );
}

/** kube-scheduler's verdict, copied by virt-controller onto the VMI and the VM. */
async function assertUnschedulable(
  client: KubeClient,
  ns: string,
  name: string,
  resource: string,
): Promise<void> {
  const waiting = await waitUntil<VirtualMachineInstance>(
    client,
    Resources.virtualMachineInstance,
    { namespace: ns, name },
    `${name} unschedulable`,
    (v) =>
      v?.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable') ?? false,
  );
  assert.equal(waiting?.status?.phase, 'Scheduling');
  assert.match(
    waiting?.status?.conditions?.find((c) => c.type === 'PodScheduled')?.message ?? '',
    new RegExp(`^0/1 nodes are available: 1 Insufficient ${resource.replace('.', '\\.')}\\.`),
  );
  await waitUntil<VirtualMachine>(
    client,
    Resources.virtualMachine,
    { namespace: ns, name },
    'printableStatus ErrorUnschedulable',
    (v) => v?.status?.printableStatus === 'ErrorUnschedulable',
  );
}

describe('the node agent names devices as Harvester does', () => {
  it('derives names and resource names from the address and the PCI ID database names', () => {
    assert.equal(pciDeviceName('harvester-node-1', '0000:3b:00.0'), 'harvester-node-1-00003b000');
    assert.ok(T4 && NIC);
    assert.equal(pciResourceName(T4), 'nvidia.com/TU104GL_TESLA_T4');
    assert.equal(pciResourceName(NIC), 'intel.com/ETHERNET_CONTROLLER_X710_FOR_10GBE_SFP');
    assert.equal(
      pciResourceName({
        vendorName: 'Advanced Micro Devices, Inc. [AMD/ATI]',
        productName: 'Navi 21',
        deviceId: '73bf',
      }),
      'amd.com/NAVI_21',
    );
    assert.equal(
      pciResourceName({ vendorName: 'NVIDIA Corporation', productName: '', deviceId: '2230' }),
      'nvidia.com/2230',
    );
  });
});

describe('pcidevices add-on stand-in', () => {
  const s = useHarvester({ name: 'standins-pcidev' });

  it('enables passthrough for a claim owned by its device, and gives the device back when it goes', async () => {
    const { client } = s;
    assert.ok(NIC);
    const device = await discoverPciDevice(client, { ...NIC, node: 'harvester-node-1' });
    const made = await client.get<PciDeviceObject>(Resources.pciDevice, { name: device.metadata.name });
    await client.create(Resources.pciDeviceClaim, uiClaim(made));
    const claim = await waitUntil<PciDeviceClaimObject>(
      client,
      Resources.pciDeviceClaim,
      { name: made.metadata.name },
      'passthrough enabled',
      (c) => c?.status?.passthroughEnabled === true,
    );
    assert.equal(claim?.status?.kernelDriverToUnbind, 'i40e');
    assert.deepEqual(claim?.metadata.finalizers, [FINALIZER_PCI_CLAIM]);
    const bound = await client.get<PciDeviceObject>(Resources.pciDevice, { name: made.metadata.name });
    assert.equal(bound.status?.kernelDriverInUse, VFIO_PCI);

    await client.delete(Resources.pciDeviceClaim, { name: made.metadata.name });
    await waitUntil(client, Resources.pciDeviceClaim, { name: made.metadata.name }, 'claim gone', gone);
    const back = await client.get<PciDeviceObject>(Resources.pciDevice, { name: made.metadata.name });
    assert.equal(back.status?.kernelDriverInUse, 'i40e');
  });

  it('leaves a claim that names no owning device pending (the controller cannot find its device)', async () => {
    const { client } = s;
    assert.ok(NIC);
    const device = await discoverPciDevice(client, { ...NIC, node: 'harvester-node-2' });
    await client.create(Resources.pciDeviceClaim, uiClaim(device, false));
    await waitUntil<PciDeviceClaimObject>(
      client,
      Resources.pciDeviceClaim,
      { name: device.metadata.name },
      'the finalizer',
      (c) => (c?.metadata.finalizers ?? []).includes(FINALIZER_PCI_CLAIM),
    );
    await s.standIns.idle();
    const claim = await client.get<PciDeviceClaimObject>(Resources.pciDeviceClaim, {
      name: device.metadata.name,
    });
    assert.notEqual(claim.status?.passthroughEnabled, true);
    const untouched = await client.get<PciDeviceObject>(Resources.pciDevice, {
      name: device.metadata.name,
    });
    assert.equal(untouched.status?.kernelDriverInUse, 'i40e');
  });

  it('enables a USB device for its claim, recording its node and controller, and disables it after', async () => {
    const { client } = s;
    const stick = SANDBOX_USB[0];
    assert.ok(stick);
    const device = await discoverUsbDevice(client, { ...stick, node: 'harvester-node-1' });
    const made = await client.get<UsbDeviceObject>(Resources.usbDevice, { name: device.metadata.name });
    assert.equal(made.metadata.name, 'harvester-node-1-0951-1666-001002');
    assert.equal(made.status?.resourceName, 'kubevirt.io/harvester-node-1-0951-1666-001002');
    await client.create<UsbDeviceClaimObject>(Resources.usbDeviceClaim, {
      apiVersion: 'devices.harvesterhci.io/v1beta1',
      kind: 'USBDeviceClaim',
      metadata: {
        name: made.metadata.name,
        ownerReferences: [
          {
            apiVersion: 'devices.harvesterhci.io/v1beta1',
            kind: 'USBDevice',
            name: made.metadata.name,
            uid: made.metadata.uid ?? '',
          },
        ],
      },
      spec: { userName: 'admin' },
    });
    const claim = await waitUntil<UsbDeviceClaimObject>(
      client,
      Resources.usbDeviceClaim,
      { name: made.metadata.name },
      'the claim status',
      (c) => c?.status?.nodeName === 'harvester-node-1',
    );
    assert.equal(claim?.status?.pciAddress, '0000:00:14.0');
    assert.deepEqual(claim?.metadata.finalizers, [FINALIZER_USB_CLAIM]);
    const permittedUsb = async () =>
      (
        await client.get<KubeVirtCr>(KubeVirtResources.kubeVirt, {
          namespace: KUBEVIRT_NAMESPACE,
          name: KUBEVIRT_CR,
        })
      ).spec.configuration?.permittedHostDevices?.usb ?? [];
    assert.deepEqual(await permittedUsb(), [
      {
        selectors: [{ vendor: '0951', product: '1666' }],
        resourceName: made.status?.resourceName,
        externalResourceProvider: true,
      },
    ]);
    assert.equal(
      (await client.get<UsbDeviceObject>(Resources.usbDevice, { name: made.metadata.name })).status?.enabled,
      true,
    );
    await client.delete(Resources.usbDeviceClaim, { name: made.metadata.name });
    await waitUntil(client, Resources.usbDeviceClaim, { name: made.metadata.name }, 'claim gone', gone);
    assert.equal(
      (await client.get<UsbDeviceObject>(Resources.usbDevice, { name: made.metadata.name })).status?.enabled,
      false,
    );
    assert.deepEqual(await permittedUsb(), [], 'the USB claim takes its permit with it');
  });

  it('permits a device in the KubeVirt CR once claimed: until then KubeVirt refuses to render the VM; then it schedules it by the device resource', async () => {
    const { client } = s;
    assert.ok(T4 && T4_SECOND);
    const ns = await createNamespace(client, 'pcidev');
    const resource = pciResourceName(T4);
    const first = await discoverPciDevice(client, T4);
    await discoverPciDevice(client, T4_SECOND); // same model, never enabled
    await client.create(
      Resources.virtualMachine,
      withHostDevices(driverVm(ns, 'gpu-a'), [{ name: 'hostdevice-1', deviceName: resource }]),
    );
    await assertNotPermitted(client, ns, 'gpu-a', resource);

    const live = await client.get<PciDeviceObject>(Resources.pciDevice, { name: first.metadata.name });
    await client.create(Resources.pciDeviceClaim, uiClaim(live));
    const vm = await waitUntil<VirtualMachine>(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'gpu-a' },
      'the allocation record',
      (v) => v?.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION] !== undefined,
      30_000,
    );
    assert.equal(
      vm?.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION],
      JSON.stringify({ hostdevices: { [resource]: [pciDeviceName(SANDBOX_NODE, T4.address)] } }),
    );
    await assertPermitted(client, resource, '10de:1eb8');
    const running = await client.get<VirtualMachineInstance>(Resources.virtualMachineInstance, {
      namespace: ns,
      name: 'gpu-a',
    });
    assert.equal(running.status?.phase, 'Running');
    const [launcher] = (await client.list<Pod>(ExtraResources.pod, { namespace: ns })).items;
    const compute = launcher?.spec.containers.find((c) => c.name === 'compute') as
      { resources?: { limits?: Record<string, string>; requests?: Record<string, string> } } | undefined;
    assert.equal(compute?.resources?.limits?.[resource], '1');
    assert.equal(compute?.resources?.requests?.[resource], '1');

    // One enabled device, two VMs: kube-scheduler keeps the second waiting until the first lets go of it.
    await client.create(
      Resources.virtualMachine,
      withHostDevices(driverVm(ns, 'gpu-b'), [{ name: 'hostdevice-1', deviceName: resource }]),
    );
    await assertUnschedulable(client, ns, 'gpu-b', resource);
    await client.delete(Resources.virtualMachine, { namespace: ns, name: 'gpu-a' });
    const b = await waitUntil<VirtualMachine>(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'gpu-b' },
      'gpu-b running with the device',
      (v) =>
        v?.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION]?.includes(first.metadata.name ?? '?') ??
        false,
      30_000,
    );
    assert.ok(b);
  });
});
