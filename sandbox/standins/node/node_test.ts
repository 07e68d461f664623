// The node stand-in's pure parts: virt-handler's volume statuses and the Node it presents, and
// the pcidevices add-on's permittedHostDevices edits (docs/upstream/kubevirt.md); the guest's
// addresses are in guest-addresses_test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { permitPciDevice, permitUsbDevice, unpermitUsbDevice } from '../harvester/permitted-host-devices.js';
import type { VirtualMachineInstance, VolumeStatus } from '../types.js';
import { domainVolumeStatuses, nextTarget, targetName } from './domain-status.js';
import { nodeLabels, nodeResources } from './node-object.js';

function vmi(volumes: string[], hotplugged: string[], statuses: VolumeStatus[]): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm', namespace: 'ns' },
    spec: {
      domain: {
        devices: {
          disks: volumes.map((name) => ({
            name,
            disk: { bus: hotplugged.includes(name) ? 'scsi' : 'virtio' },
          })),
          interfaces: [{ name: 'nic-0' }, { name: 'nic-1' }],
        },
      },
      volumes: volumes.map((name) => ({
        name,
        persistentVolumeClaim: {
          claimName: name,
          ...(hotplugged.includes(name) ? { hotpluggable: true } : {}),
        },
      })),
    },
    status: { volumeStatus: statuses },
  };
}

describe("virt-handler's volume statuses", () => {
  it('names targets per bus as libvirt does', () => {
    assert.equal(targetName('virtio', 0), 'vda');
    assert.equal(targetName('scsi', 27), 'sdab');
    const v = vmi(['boot', 'data'], ['data'], []);
    assert.equal(nextTarget(v, 'data', ['vda', 'sda']), 'sdb');
  });

  it('gives every disk of the domain a target, sorted by name', () => {
    const v = vmi(
      ['zeta', 'alpha'],
      [],
      [
        { name: 'zeta', target: '' },
        { name: 'alpha', target: '' },
      ],
    );
    assert.deepEqual(
      domainVolumeStatuses(v).map((s) => [s.name, s.target]),
      [
        ['alpha', 'vdb'],
        ['zeta', 'vda'],
      ],
    );
  });

  it('mounts a hot-plugged volume once its attachment pod is ready, then attaches it', () => {
    const waiting: VolumeStatus = { name: 'hp', target: '', phase: 'AttachedToNode', hotplugVolume: {} };
    assert.equal(domainVolumeStatuses(vmi(['hp'], ['hp'], [waiting]))[0]?.phase, 'AttachedToNode');
    const ready = { ...waiting, hotplugVolume: { attachPodName: 'hp-volume-x', attachPodUID: 'u1' } };
    const mounted = domainVolumeStatuses(vmi(['hp'], ['hp'], [ready]))[0];
    assert.equal(mounted?.phase, 'MountedToPod');
    assert.equal(mounted?.target, '');
    assert.ok(mounted);
    const attached = domainVolumeStatuses(vmi(['hp'], ['hp'], [mounted]))[0];
    assert.equal(attached?.phase, 'Ready');
    assert.equal(attached?.target, 'sda');
    assert.equal(attached?.message, 'Successfully attach hotplugged volume hp to VM');
  });

  it('unmounts a hot-plugged volume gone from the spec', () => {
    const was: VolumeStatus = {
      name: 'hp',
      target: 'sda',
      phase: 'Ready',
      hotplugVolume: { attachPodName: 'hp-volume-x', attachPodUID: 'u1' },
    };
    const [status] = domainVolumeStatuses(vmi([], [], [was]));
    assert.equal(status?.phase, 'UnMountedFromPod');
    assert.equal(status?.target, '');
  });
});

describe('the node as the kubelet and virt-handler present it', () => {
  it('matches what virt-controller selects launcher pods by', () => {
    const labels = nodeLabels();
    assert.equal(labels['kubevirt.io/schedulable'], 'true');
    assert.equal(labels['kubernetes.io/arch'], 'amd64');
    assert.equal(labels['machine-type.node.kubevirt.io/q35'], 'true');
    assert.equal(labels['node-labeller.kubevirt.io/obsolete-host-model'], undefined);
  });

  it("offers virt-handler's device plugins and one unit per device a plugin registered", () => {
    const resources = nodeResources(new Map([['nvidia.com/TU104GL_TESLA_T4', ['gpu-a', 'gpu-b']]]));
    assert.equal(resources['devices.kubevirt.io/kvm'], '1k');
    assert.equal(resources['nvidia.com/TU104GL_TESLA_T4'], '2');
    assert.equal(nodeResources(new Map())['nvidia.com/TU104GL_TESLA_T4'], undefined);
  });
});

describe("the pcidevices add-on's permittedHostDevices", () => {
  const t4 = { resourceName: 'nvidia.com/TU104GL_TESLA_T4', vendorSelector: '10de:1eb8' };

  it('adds a PCI device once, as an external resource, and replaces an entry KubeVirt would serve itself', () => {
    const once = permitPciDevice(undefined, t4);
    assert.deepEqual(once.pciHostDevices, [
      { pciVendorSelector: '10de:1eb8', resourceName: t4.resourceName, externalResourceProvider: true },
    ]);
    assert.deepEqual(permitPciDevice(once, t4), once);
    const own = { pciHostDevices: [{ pciVendorSelector: '10de:1eb8', resourceName: t4.resourceName }] };
    assert.deepEqual(permitPciDevice(own, t4).pciHostDevices, once.pciHostDevices);
  });

  it('adds a USB device for its claim and takes it out with the claim', () => {
    const stick = { resourceName: 'kubevirt.io/node-0951-1666-001002', vendor: '0951', product: '1666' };
    const added = permitUsbDevice({ pciHostDevices: [] }, stick);
    assert.deepEqual(added.usb, [
      {
        selectors: [{ vendor: '0951', product: '1666' }],
        resourceName: stick.resourceName,
        externalResourceProvider: true,
      },
    ]);
    assert.deepEqual(permitUsbDevice(added, stick), added);
    assert.deepEqual(unpermitUsbDevice(added, stick.resourceName), { pciHostDevices: [], usb: [] });
  });
});
