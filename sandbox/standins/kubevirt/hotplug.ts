// Declarative volume hot-plug (KubeVirt v1.7.0 pkg/storage/hotplug, the path Harvester
// >= 1.8 uses): the VM controller copies hotpluggable volumes and their disks from the
// VM spec to a running VMI's spec, and drops the ones removed from the VM spec, with a
// JSON patch that tests both arrays first.
import type { Disk, VirtualMachine, VirtualMachineInstance, Volume } from '../types.js';
import { isHotplugVolume } from './vmi-template.js';
import { sameJson } from '../runtime.js';

export interface HotplugPatch {
  ops: Array<{ op: string; path: string; value: unknown }>;
}

/** The patch that brings the VMI's hot-plug volumes in line with the VM, or undefined. */
export function hotplugPatch(vm: VirtualMachine, vmi: VirtualMachineInstance): HotplugPatch | undefined {
  if (vmi.status?.phase !== 'Running') return undefined;
  const vmSpec = vm.spec.template.spec;
  const vmVolumes = new Map((vmSpec.volumes ?? []).map((v) => [v.name, v]));
  const vmDisks = new Map((vmSpec.domain.devices?.disks ?? []).map((d) => [d.name, d]));
  const vmiVolumes = vmi.spec.volumes ?? [];
  const vmiDisks = vmi.spec.domain.devices?.disks ?? [];

  // Keep every VMI volume, except hot-plugged ones gone from (or changed in) the VM.
  const kept = vmiVolumes.filter((v) => {
    if (!isHotplugVolume(v)) return true;
    const inVm = vmVolumes.get(v.name);
    return inVm !== undefined && !(isHotplugVolume(inVm) && !sameJson(inVm, v));
  });
  // A volume still reported in volumeStatus is being unplugged: not re-added yet.
  const withStatus = new Set((vmi.status?.volumeStatus ?? []).map((s) => s.name));
  const added: Volume[] = (vmSpec.volumes ?? []).filter(
    (v) => isHotplugVolume(v) && !vmiVolumes.some((x) => x.name === v.name) && !withStatus.has(v.name),
  );
  const volumes = [...kept, ...added.map((v) => structuredClone(v))];
  const volumeNames = new Set(volumes.map((v) => v.name));

  const keptDisks = vmiDisks.filter((d) => {
    if (volumeNames.has(d.name)) return true;
    const inVm = vmDisks.get(d.name);
    if (!inVm) return false;
    const volumeChanged = vmVolumes.has(d.name);
    return !(volumeChanged && (inVm.cdrom === undefined || d.cdrom === undefined));
  });
  const addedDisks: Disk[] = (vmSpec.domain.devices?.disks ?? []).filter(
    (d) =>
      volumes.some((v) => v.name === d.name && isHotplugVolume(v)) &&
      !vmiDisks.some((x) => x.name === d.name),
  );
  const disks = [...keptDisks, ...addedDisks.map((d) => structuredClone(d))];

  if (sameJson(volumes, vmiVolumes) && sameJson(disks, vmiDisks)) return undefined;
  return {
    ops: [
      { op: 'test', path: '/spec/volumes', value: vmi.spec.volumes ?? null },
      { op: 'test', path: '/spec/domain/devices/disks', value: vmi.spec.domain.devices?.disks ?? null },
      { op: vmi.spec.volumes?.length ? 'replace' : 'add', path: '/spec/volumes', value: volumes },
      {
        op: vmi.spec.domain.devices?.disks?.length ? 'replace' : 'add',
        path: '/spec/domain/devices/disks',
        value: disks,
      },
    ],
  };
}
