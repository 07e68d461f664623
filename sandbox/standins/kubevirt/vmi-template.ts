// The VirtualMachineInstance KubeVirt's VM controller creates for a VM (SetupVMIFromVM and
// startVMI, v1.7.0), as stored after virt-api's mutating webhook added its finalizer:
// the template's metadata and spec, name = VM name, a controller reference to the VM, the
// VM generation it was made from, and a disk for every volume that has none.
import { Annotations, Finalizers } from '../names.js';
import type { Disk, VirtualMachine, VirtualMachineInstance, VmiSpec } from '../types.js';

export function vmiForVm(vm: VirtualMachine): VirtualMachineInstance {
  const template = structuredClone(vm.spec.template);
  const metadata = { ...(template.metadata ?? {}) } as VirtualMachineInstance['metadata'];
  delete metadata.generateName;
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: {
      ...metadata,
      name: vm.metadata.name,
      namespace: vm.metadata.namespace ?? '',
      ...(template.metadata?.labels ? { labels: template.metadata.labels } : {}),
      annotations: {
        ...template.metadata?.annotations,
        [Annotations.vmGeneration]: String(vm.metadata.generation ?? 1),
        [Annotations.latestObservedApiVersion]: 'v1',
        [Annotations.storageObservedApiVersion]: 'v1',
      },
      ownerReferences: [
        {
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachine',
          name: vm.metadata.name,
          uid: vm.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      finalizers: [Finalizers.kubevirtVmController, Finalizers.kubevirtVmiForegroundDelete],
    },
    spec: withDefaultVolumeDisks(template.spec),
  };
}

/** KubeVirt's SetDefaultVolumeDisk: a volume without a disk or filesystem gets a plain disk. */
function withDefaultVolumeDisks(spec: VmiSpec): VmiSpec {
  const devices = { ...spec.domain.devices };
  const disks: Disk[] = [...(devices.disks ?? [])];
  const filesystems = (devices.filesystems as Array<{ name: string }> | undefined) ?? [];
  const named = new Set([...disks.map((d) => d.name), ...filesystems.map((f) => f.name)]);
  for (const volume of spec.volumes ?? []) if (!named.has(volume.name)) disks.push({ name: volume.name });
  if (disks.length > 0) devices.disks = disks;
  return { ...spec, domain: { ...spec.domain, devices } };
}

/** The claim a volume uses (persistentVolumeClaim or dataVolume). */
export function claimNameOf(volume: {
  persistentVolumeClaim?: { claimName: string };
  dataVolume?: { name: string };
}): string | undefined {
  return volume.persistentVolumeClaim?.claimName ?? volume.dataVolume?.name;
}

export function isHotplugVolume(volume: {
  persistentVolumeClaim?: { hotpluggable?: boolean };
  dataVolume?: { hotpluggable?: boolean };
}): boolean {
  return volume.persistentVolumeClaim?.hotpluggable === true || volume.dataVolume?.hotpluggable === true;
}
