import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ANNOTATION_DEVICE_ALLOCATION,
  hostDeviceVerdict,
  type DeviceInventory,
  type DeviceUsingVm,
  type PciDevice,
  type PciDeviceClaim,
  type UsbDevice,
} from './host-device-availability.js';

const T4 = 'nvidia.com/TU104GL_TESLA_T4';
const NIC = 'intel.com/ETHERNET_CONTROLLER_X710';
const SELF = 'default/gpu-pool1-abc12-x2v9q';

/** A PCIDevice as the pcidevices node agent names it: <node>-<address without : and .>. */
function pci(node: string, address: string, resourceName: string): PciDevice {
  return {
    metadata: { name: `${node}-${address.replace(/[:.]/g, '')}` },
    status: { address, nodeName: node, resourceName, description: 'a device' },
  };
}
/** The claim Harvester's UI makes to enable passthrough (name = the device's). */
function claim(device: PciDevice, enabled: boolean, userName = 'admin'): PciDeviceClaim {
  return {
    metadata: { name: device.metadata.name },
    spec: { address: device.status?.address ?? '', nodeName: device.status?.nodeName ?? '', userName },
    status: { passthroughEnabled: enabled },
  };
}
function usb(node: string, enabled: boolean): UsbDevice {
  const name = `${node}-0951-1666-001002`;
  return { metadata: { name }, status: { nodeName: node, resourceName: `kubevirt.io/${name}`, enabled } };
}
function vm(
  name: string,
  hostDevices: Array<{ name: string; deviceName: string }>,
  allocated?: string[],
): DeviceUsingVm {
  return {
    metadata: {
      name,
      namespace: 'default',
      ...(allocated
        ? {
            annotations: {
              [ANNOTATION_DEVICE_ALLOCATION]: JSON.stringify({ hostdevices: { [T4]: allocated } }),
            },
          }
        : {}),
    },
    spec: { template: { spec: { domain: { devices: { hostDevices } } } } },
  };
}
const inventory = (over: Partial<DeviceInventory>): DeviceInventory => ({
  pciDevices: [],
  pciClaims: [],
  usbDevices: [],
  vms: [],
  ...over,
});
const ask = (...deviceNames: string[]) => ({
  hostDevices: deviceNames.map((deviceName, i) => ({ name: `hostdevice-${i + 1}`, deviceName })),
});

const n1 = pci('harvester-node-1', '0000:3b:00.0', T4);
const n2 = pci('harvester-node-2', '0000:af:00.0', T4);
const nic1 = pci('harvester-node-1', '0000:18:00.0', NIC);
const nic2 = pci('harvester-node-2', '0000:18:00.0', NIC);

describe('host device placement', () => {
  it('refuses a device no node has enabled, naming each node, device and why', () => {
    const { problems } = hostDeviceVerdict(
      ask(T4),
      inventory({ pciDevices: [n1, n2], pciClaims: [claim(n2, false, 'user-abc')] }),
      SELF,
    );
    assert.equal(problems.length, 1);
    assert.equal(
      problems[0],
      `host device hostdevice-1 (${T4}): no node has it enabled for passthrough and free — ` +
        'harvester-node-1: harvester-node-1-00003b000 not enabled for passthrough (no PCIDeviceClaim); ' +
        'harvester-node-2: harvester-node-2-0000af000 claimed by user-abc, passthrough not enabled yet; ' +
        'enable passthrough in the Harvester UI (Advanced > PCI Devices or USB Devices > Enable Passthrough), or free a device',
    );
  });

  it('accepts a device enabled on one node, whoever claimed it', () => {
    const verdict = hostDeviceVerdict(
      ask(T4),
      inventory({ pciDevices: [n1, n2], pciClaims: [claim(n2, true, 'someone-else')] }),
      SELF,
    );
    assert.deepEqual(verdict, { problems: [], notes: [] });
  });

  it('counts a device in use when a VM names it or Harvester recorded it as allocated to one', () => {
    const inv = inventory({
      pciDevices: [n1, n2],
      pciClaims: [claim(n1, true), claim(n2, true)],
      vms: [
        vm('ui-made', [{ name: 'harvester-node-1-00003b000', deviceName: T4 }]),
        vm('pool-made', [{ name: 'hostdevice-1', deviceName: T4 }], ['harvester-node-2-0000af000']),
      ],
    });
    const { problems } = hostDeviceVerdict(ask(T4), inv, SELF);
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /harvester-node-1-00003b000 in use by VM default\/ui-made/);
    assert.match(problems[0] ?? '', /harvester-node-2-0000af000 in use by VM default\/pool-made/);
    // The VM this create is about (left by an earlier attempt) does not hold its own devices.
    const self = hostDeviceVerdict(
      ask(T4),
      { ...inv, vms: [vm('gpu-pool1-abc12-x2v9q', [], ['harvester-node-2-0000af000'])] },
      SELF,
    );
    assert.deepEqual(self.problems, []);
  });

  it('needs as many free devices on one node as the VM asks for', () => {
    const n1b = pci('harvester-node-1', '0000:3c:00.0', T4);
    const claims = [claim(n1, true), claim(n2, true)];
    const two = hostDeviceVerdict(
      ask(T4, T4),
      inventory({ pciDevices: [n1, n1b, n2], pciClaims: claims }),
      SELF,
    );
    assert.equal(two.problems.length, 1);
    assert.match(
      two.problems[0] ?? '',
      /^host devices hostdevice-1, hostdevice-2 \(2 × nvidia\.com\/TU104GL_TESLA_T4\): no node has 2 of them enabled/,
    );
    const ok = hostDeviceVerdict(
      ask(T4, T4),
      inventory({ pciDevices: [n1, n1b, n2], pciClaims: [...claims, claim(n1b, true)] }),
      SELF,
    );
    assert.deepEqual(ok.problems, []);
  });

  it('needs one node with all the devices: a VM gets its devices from the node it runs on', () => {
    const split = hostDeviceVerdict(
      ask(T4, NIC),
      inventory({ pciDevices: [n1, nic2, n2, nic1], pciClaims: [claim(n1, true), claim(nic2, true)] }),
      SELF,
    );
    assert.deepEqual(split.problems, [
      `host devices ${T4}, ${NIC}: a VM's devices all come from one node, and no node has all of them enabled and free — ` +
        `harvester-node-1 has ${T4} free; harvester-node-2 has ${NIC} free`,
    ]);
    const together = hostDeviceVerdict(
      ask(T4, NIC),
      inventory({ pciDevices: [n1, nic2, n2, nic1], pciClaims: [claim(n1, true), claim(nic1, true)] }),
      SELF,
    );
    assert.deepEqual(together.problems, []);
  });

  it('refuses a resource name no device has, listing what is enabled', () => {
    const { problems } = hostDeviceVerdict(
      ask('nvidia.com/A100'),
      inventory({ pciDevices: [n1, nic1], pciClaims: [claim(n1, true)] }),
      SELF,
    );
    assert.deepEqual(problems, [
      `host device hostdevice-1 (nvidia.com/A100): no PCI or USB device on Harvester has this resource name; devices enabled for passthrough have ${T4}`,
    ]);
    const none = hostDeviceVerdict(ask('nvidia.com/A100'), inventory({ pciDevices: [n1] }), SELF);
    assert.match(none.problems[0] ?? '', /no device is enabled for passthrough$/);
  });

  it('treats USB devices alike: enabled on its node, used by any VM asking for its resource', () => {
    const stick = usb('harvester-node-1', true);
    const resource = stick.status?.resourceName ?? '';
    assert.match(
      hostDeviceVerdict(ask(resource), inventory({ usbDevices: [usb('harvester-node-1', false)] }), SELF)
        .problems[0] ?? '',
      /harvester-node-1-0951-1666-001002 not enabled for passthrough;/,
    );
    const free = hostDeviceVerdict(ask(resource), inventory({ usbDevices: [stick] }), SELF);
    assert.deepEqual(free.problems, []);
    assert.deepEqual(free.notes, [
      `host device hostdevice-1 (${resource}) is the USB device harvester-node-1-0951-1666-001002: naming the entry "harvester-node-1-0951-1666-001002" lets Harvester refuse to disable its passthrough while the VM uses it`,
    ]);
    const taken = hostDeviceVerdict(
      ask(resource),
      inventory({ usbDevices: [stick], vms: [vm('other', [{ name: 'stick', deviceName: resource }])] }),
      SELF,
    );
    assert.match(taken.problems[0] ?? '', /in use by VM default\/other/);
  });

  it('never refuses what it could not see: an unreadable list turns a miss into a note', () => {
    const verdict = hostDeviceVerdict(
      ask('nvidia.com/A100'),
      inventory({ pciDevices: undefined, pciClaims: undefined }),
      SELF,
    );
    assert.deepEqual(verdict.problems, []);
    assert.match(verdict.notes[0] ?? '', /not checked: no listed device has that resource name/);
  });

  it('lists at most ten devices in a refusal', () => {
    const many = Array.from({ length: 14 }, (_, i) => pci(`node-${i}`, '0000:3b:00.0', T4));
    const { problems } = hostDeviceVerdict(ask(T4), inventory({ pciDevices: many }), SELF);
    assert.match(
      problems[0] ?? '',
      /node-9: node-9-00003b000 not enabled for passthrough \(no PCIDeviceClaim\); and 4 more;/,
    );
    assert.doesNotMatch(problems[0] ?? '', /node-10/);
  });
});
