// A pool with a passed-through GPU: a Harvester operator enables passthrough on one of the
// sandbox node's Tesla T4s as Harvester's UI does (a PCIDeviceClaim owned by the device),
// the pool asks for the device by its resource name (--harvester-host-device-info, as
// Rancher's node-pool form writes hostDeviceInfo), and its VM runs with the device.
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import type { VirtualMachine } from '../../src/harvester/types.js';
import { pciDeviceName, pciResourceName, SANDBOX_PCI } from '../standins/harvester/device-discovery.js';
import type { PciDeviceClaimObject, PciDeviceObject } from '../standins/harvester/device-types.js';
import { ANNOTATION_DEVICE_ALLOCATION } from '../standins/harvester/pcidevices-controller.js';
import { SANDBOX_NODE } from '../standins/names.js';
import type { Story } from './story.js';

const [T4] = SANDBOX_PCI;
const GPU = T4 ? pciDeviceName(SANDBOX_NODE, T4.address) : '';
export const GPU_RESOURCE = T4 ? pciResourceName(T4) : '';

/** The pool's HarvesterConfig field hostDeviceInfo (the `--harvester-host-device-info` flag), as Rancher's form writes it. */
export function gpuPool(): Record<string, string> {
  return {
    hostDeviceInfo: JSON.stringify({ hostDevices: [{ name: 'hostdevice-1', deviceName: GPU_RESOURCE }] }),
  };
}

export async function enableGpuPassthrough(story: Story): Promise<void> {
  const { say } = story;
  const admin = story.world.sandbox.harvester.admin;
  const device = await admin.get<PciDeviceObject>(Resources.pciDevice, { name: GPU });
  await admin.create<PciDeviceClaimObject>(Resources.pciDeviceClaim, {
    apiVersion: 'devices.harvesterhci.io/v1beta1',
    kind: 'PCIDeviceClaim',
    metadata: {
      name: GPU,
      ownerReferences: [
        {
          apiVersion: 'devices.harvesterhci.io/v1beta1',
          kind: 'PCIDevice',
          name: GPU,
          uid: device.metadata.uid ?? '',
        },
      ],
    },
    spec: {
      address: device.status?.address ?? '',
      nodeName: device.status?.nodeName ?? '',
      userName: 'admin',
    },
  });
  const claim = await waitFor<PciDeviceClaimObject>(admin, {
    type: Resources.pciDeviceClaim,
    name: GPU,
    description: `passthrough on ${GPU}`,
    timeoutMs: 15_000,
    until: (c) => c?.status?.passthroughEnabled === true,
  });
  const bound = await admin.get<PciDeviceObject>(Resources.pciDevice, { name: GPU });
  say.say(
    'Harvester',
    `an operator enables passthrough on ${GPU} (${device.status?.description ?? ''}; Advanced > PCI Devices): PCIDeviceClaim ${GPU}, owned by the device`,
  );
  say.check(
    claim?.status?.passthroughEnabled === true && bound.status?.kernelDriverInUse === 'vfio-pci',
    `passthrough enabled on ${GPU}: bound to vfio-pci, ${SANDBOX_NODE} offers ${GPU_RESOURCE}`,
  );
}

/** The pool's machines ask for the GPU by resource and got it. */
export async function checkGpuMachines(story: Story, cluster: string): Promise<void> {
  const { say } = story;
  const admin = story.world.sandbox.harvester.admin;
  const namespace = story.view.namespace;
  for (const m of story.guest(cluster).machines) {
    const vm = await waitFor<VirtualMachine & KubeObject>(admin, {
      type: Resources.virtualMachine,
      namespace,
      name: m.instanceName,
      description: `Harvester's record of the device given to ${m.instanceName}`,
      timeoutMs: 15_000,
      until: (v) => v?.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION] !== undefined,
    }).catch(() => undefined);
    const asked = vm?.spec.template.spec.domain.devices.hostDevices ?? [];
    const record = vm?.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION] ?? '(none)';
    say.say(
      'Harvester',
      `VM ${m.instanceName}: hostDevices ${JSON.stringify(asked)}; ${ANNOTATION_DEVICE_ALLOCATION}: ${record}`,
    );
    say.check(
      asked.some((d) => d.deviceName === GPU_RESOURCE) &&
        record === JSON.stringify({ hostdevices: { [GPU_RESOURCE]: [GPU] } }),
      `VM ${m.instanceName} asks for ${GPU_RESOURCE} and was given ${GPU}`,
    );
  }
}
