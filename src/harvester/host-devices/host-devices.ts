// --harvester-host-device-info: PCI and USB devices passed through to the machine's VM,
// `{"hostDevices":[{"name":"hostdevice-1","deviceName":"nvidia.com/TU104GL_TESLA_T4"}]}`.
// Each entry becomes one `domain.devices.hostDevices` entry of the VM; `deviceName` is the
// node resource a claimed device advertises, and the scheduler picks the node (and the
// device plugin the device) from it: no node affinity is added, as neither Harvester's
// VM form nor Rancher's node-pool form adds one
// (docs/upstream/harvester-host-devices.md#what-a-vm-needs).
import { entries, field, parseJsonObject, vgpuDeviceNames, type Parsed } from '../disk-network-info.js';
import type { GoHostDeviceInfo, GoVGPUInfo } from '../config/go-config.js';
import { parseHarvesterVersion } from '../load-balancers.js';
import type { HostDevice } from '../types.js';

export const HOST_DEVICE_INFO_EXAMPLE =
  '{"hostDevices":[{"name":"hostdevice-1","deviceName":"nvidia.com/TU104GL_TESLA_T4"}]}';

/** Go's json.Unmarshal into the proposed struct; a missing list is refused (a typo would pass no device). */
export function parseHostDeviceInfo(text: string): Parsed<GoHostDeviceInfo> {
  const parsed = parseJsonObject(text, HOST_DEVICE_INFO_EXAMPLE);
  if (!parsed.value) return { problems: parsed.problems };
  const raw = parsed.value['hostDevices'];
  if (raw === undefined || raw === null) {
    const keys = Object.keys(parsed.value);
    return {
      problems: [
        `has no "hostDevices" list${keys.length > 0 ? ` (it has ${keys.map((k) => `"${k}"`).join(', ')})` : ''}; expected ${HOST_DEVICE_INFO_EXAMPLE}`,
      ],
    };
  }
  if (!Array.isArray(raw)) return { problems: ['"hostDevices" must be a list'] };
  const problems: string[] = [];
  const hostDevices = entries(raw, 'hostDevices', problems).map(([where, d]) => ({
    name: field(d, 'name', 'string', where, problems) as string,
    deviceName: field(d, 'deviceName', 'string', where, problems) as string,
  }));
  return problems.length > 0 ? { problems } : { value: { hostDevices }, problems };
}

// A Kubernetes extended resource name, as the device plugins register them: a DNS subdomain
// prefix, "/", and a name of at most 63 letters, digits, "-", "_" or ".".
const RESOURCE_PREFIX =
  /^(?=.{1,253}\/)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\//;
const RESOURCE_NAME = /^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

function resourceNameProblem(deviceName: string): string | undefined {
  const prefix = RESOURCE_PREFIX.exec(deviceName);
  const name = prefix ? deviceName.slice(prefix[0].length) : '';
  if (!prefix || !RESOURCE_NAME.test(name)) {
    return 'must be a device resource name "<vendor domain>/<name>" (a PCI or USB device\'s status.resourceName, e.g. nvidia.com/TU104GL_TESLA_T4)';
  }
  if (/^(?:[^/]*\.)?kubernetes\.io\//.test(deviceName)) {
    return 'names a Kubernetes resource, not a device (kubernetes.io/ is reserved)';
  }
  return undefined;
}

/**
 * Checks before anything is created. vGPUs become host devices too (Harvester's builder),
 * so a name may appear only once across both lists.
 */
export function hostDeviceInfoProblems(info: GoHostDeviceInfo, vgpu: GoVGPUInfo | null): string[] {
  const problems: string[] = [];
  // The names the vGPUs get on the VM (an empty one is derived from its device).
  const vgpuNames = new Set(vgpu ? vgpuDeviceNames(vgpu) : []);
  const names = new Set<string>();
  info.hostDevices.forEach((d, i) => {
    const where = `hostDevices[${i}]`;
    if (d.name === '')
      problems.push(`${where}.name is required (unique within the VM, e.g. hostdevice-${i + 1})`);
    else if (names.has(d.name))
      problems.push(
        `${where}.name "${d.name}" is used twice: both devices would get the libvirt alias ua-hostdevice-${d.name}, and libvirt refuses such a VM`,
      );
    else if (vgpuNames.has(d.name))
      problems.push(`${where}.name "${d.name}" is already the name of a vGPU (--harvester-vgpu-info)`);
    names.add(d.name);
    if (d.deviceName === '') {
      problems.push(
        `${where}.deviceName is required: the device's resource name, e.g. nvidia.com/TU104GL_TESLA_T4`,
      );
    } else {
      const bad = resourceNameProblem(d.deviceName);
      if (bad) problems.push(`${where}.deviceName "${d.deviceName}" ${bad}`);
    }
  });
  return problems;
}

/** libvirt's characters for a user alias (`ua-hostdevice-<name>`, which virt-launcher gives each device). */
const LIBVIRT_ALIAS = /^[A-Za-z0-9_-]+$/;
/** The first Harvester whose VMI mutator encodes other host-device names (base32, unpadded). */
export const HARVESTER_ENCODES_DEVICE_NAMES_SINCE = 'v1.8.0';

function encodesDeviceNames(serverVersion: string | undefined): boolean {
  const v = parseHarvesterVersion(serverVersion);
  if (!v || v.prerelease) return false;
  return v.major > 1 || (v.major === 1 && v.minor >= 8);
}

/**
 * Names libvirt would refuse on this Harvester (docs/upstream/harvester-kubevirt.md#host-devices-and-vgpus):
 * KubeVirt checks no host-device name and passes it to libvirt as the alias
 * `ua-hostdevice-<name>`, whose characters libvirt limits to letters, digits, "_" and "-".
 * Harvester from v1.8.0 encodes any other name before the VM starts; before it (or when the
 * version is not a release) such a VM never starts, and the create waits to its timeout.
 * Neither limits the length.
 */
export function hostDeviceNameProblems(info: GoHostDeviceInfo, serverVersion: string | undefined): string[] {
  if (encodesDeviceNames(serverVersion)) return [];
  const problems: string[] = [];
  info.hostDevices.forEach((d, i) => {
    if (d.name === '' || LIBVIRT_ALIAS.test(d.name)) return;
    const shown = d.name.length > 64 ? `${d.name.slice(0, 64)}…` : d.name;
    const bad = [...new Set([...d.name].filter((c) => !/[A-Za-z0-9_-]/.test(c)))]
      .slice(0, 5)
      .map((c) => (c === ' ' ? 'a space' : JSON.stringify(c)))
      .join(', ');
    problems.push(
      `hostDevices[${i}].name ${JSON.stringify(shown)} holds ${bad}: Harvester ${serverVersion ?? '(version unknown)'} passes it to libvirt as the device alias ua-hostdevice-<name>, where libvirt takes only letters, digits, "_" and "-", so the VM would never start; rename it (Harvester ${HARVESTER_ENCODES_DEVICE_NAMES_SINCE} and later encode such names)`,
    );
  });
  return problems;
}

/** The VM's host device entries for the requests, after any vGPU entries (the Go proposal's order). */
export function hostDeviceEntries(info: GoHostDeviceInfo | null): HostDevice[] {
  return (info?.hostDevices ?? []).map((d) => ({ name: d.name, deviceName: d.deviceName }));
}
