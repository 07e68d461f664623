// The JSON values of --harvester-disk-info, --harvester-network-info and
// --harvester-vgpu-info: parsing with Go's json.Unmarshal rules (keys match fields
// case-insensitively, missing keys are zero values, unknown keys ignored, a wrong type is an
// error), then the checks the Go driver leaves to KubeVirt, libvirt or the scheduler, which
// refuse such a VM only after it was created. Each says why the VM would fail with the Go
// driver too. Problems are phrases that follow the flag name; they quote no value that could
// be a secret (these values hold none).

import type { GoDiskInfo, GoNetworkInfo, GoVGPUInfo } from './config/go-config.js';
import { jsonProblem } from '../common/parse-problems.js';
import { goField } from './config/go-json-decode.js';
import { diskStorageProblems } from './storage-options.js';

export const DISK_BUSES = ['virtio', 'sata', 'scsi', 'usb'] as const;
/** Harvester's builder makes a CD-ROM of "cd-rom" and a disk of every other type. */
export const DISK_TYPES = ['disk', 'cd-rom'] as const;
/** KubeVirt's interface models. */
export const NETWORK_MODELS = ['virtio', 'e1000', 'e1000e', 'igb', 'ne2k_pci', 'pcnet', 'rtl8139'] as const;
/**
 * Harvester's builder binds "bridge" as a bridge and every other type as masquerade, which
 * KubeVirt allows only on the pod network; every interface here names a Multus network.
 */
export const INTERFACE_TYPES = ['bridge'] as const;
export const DEFAULT_DISK_BUS = 'virtio';
export const DEFAULT_NETWORK_MODEL = 'virtio';

/** What KubeVirt accepts: Go's net.ParseMAC forms of a 6-byte address. */
const MAC =
  /^(?:[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})$/;

export interface Parsed<T> {
  value?: T;
  problems: string[];
}

export function parseJsonObject(text: string, what: string): Parsed<Record<string, unknown>> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { problems: [jsonProblem(err)] };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { problems: [`must be a JSON object like ${what}`] };
  }
  return { value: value as Record<string, unknown>, problems: [] };
}

export type FieldKind = 'string' | 'uint' | 'int' | 'bool';

/** Reads one field with Go's rules: absent or null → zero value, wrong type → problem. */
export function field(
  obj: Record<string, unknown>,
  key: string,
  kind: FieldKind,
  where: string,
  problems: string[],
): string | number | boolean {
  const zero = kind === 'string' ? '' : kind === 'bool' ? false : 0;
  const v = goField(obj, key);
  if (v === undefined || v === null) return zero;
  const ok =
    kind === 'string'
      ? typeof v === 'string'
      : kind === 'bool'
        ? typeof v === 'boolean'
        : typeof v === 'number' && Number.isInteger(v) && (kind === 'int' || v >= 0);
  if (ok) return v as string | number | boolean;
  const expected =
    kind === 'string'
      ? 'a string'
      : kind === 'bool'
        ? 'true or false'
        : kind === 'uint'
          ? 'a whole number ≥ 0'
          : 'a whole number';
  problems.push(`${where}.${key} must be ${expected}`);
  return zero;
}

function list(obj: Record<string, unknown>, key: string, example: string, problems: string[]): unknown[] {
  const v = goField(obj, key);
  if (Array.isArray(v)) return v;
  problems.push(
    v === undefined || v === null ? `has no "${key}" list (expected ${example})` : `"${key}" must be a list`,
  );
  return [];
}

export function entries(
  items: unknown[],
  key: string,
  problems: string[],
): Array<[string, Record<string, unknown>]> {
  const out: Array<[string, Record<string, unknown>]> = [];
  items.forEach((item, i) => {
    const where = `${key}[${i}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      problems.push(`${where} must be an object`);
    else out.push([where, item as Record<string, unknown>]);
  });
  return out;
}

/** A Harvester object reference: "name" or "namespace/name". */
export function namespacedNameProblem(value: string): string | undefined {
  const parts = value.split('/');
  if (parts.length > 2 || parts.some((p) => p === '')) return 'must be "name" or "namespace/name"';
  return undefined;
}

export function parseDiskInfo(text: string): Parsed<GoDiskInfo> {
  const parsed = parseJsonObject(text, '{"disks":[{"imageName":"default/image-x","size":40,"bootOrder":1}]}');
  if (!parsed.value) return { problems: parsed.problems };
  const problems: string[] = [];
  const items = list(parsed.value, 'disks', '{"disks":[{"imageName":"…","size":40}]}', problems);
  const disks = entries(items, 'disks', problems).map(([where, d]) => {
    const disk: GoDiskInfo['disks'][number] = {
      imageName: field(d, 'imageName', 'string', where, problems) as string,
      storageClassName: field(d, 'storageClassName', 'string', where, problems) as string,
      size: field(d, 'size', 'int', where, problems) as number,
      bootOrder: field(d, 'bootOrder', 'uint', where, problems) as number,
      bus: field(d, 'bus', 'string', where, problems) as string,
      type: field(d, 'type', 'string', where, problems) as string,
      hotPlugAble: field(d, 'hotPlugAble', 'bool', where, problems) as boolean,
    };
    // The storage options: kept only when set, so a disk without them stays as Go writes it.
    const cache = field(d, 'cache', 'string', where, problems) as string;
    const io = field(d, 'io', 'string', where, problems) as string;
    const dedicated = field(d, 'dedicatedIOThread', 'bool', where, problems) as boolean;
    if (cache !== '') disk.cache = cache;
    if (io !== '') disk.io = io;
    if (dedicated) disk.dedicatedIOThread = true;
    return disk;
  });
  return problems.length > 0 ? { problems } : { value: { disks }, problems };
}

export function parseNetworkInfo(text: string): Parsed<GoNetworkInfo> {
  const parsed = parseJsonObject(text, '{"interfaces":[{"networkName":"default/vlan1"}]}');
  if (!parsed.value) return { problems: parsed.problems };
  const problems: string[] = [];
  const items = list(parsed.value, 'interfaces', '{"interfaces":[{"networkName":"…"}]}', problems);
  const interfaces = entries(items, 'interfaces', problems).map(([where, n]) => ({
    networkName: field(n, 'networkName', 'string', where, problems) as string,
    macAddress: field(n, 'macAddress', 'string', where, problems) as string,
    model: field(n, 'model', 'string', where, problems) as string,
    type: field(n, 'type', 'string', where, problems) as string,
  }));
  return problems.length > 0 ? { problems } : { value: { interfaces }, problems };
}

export function parseVGPUInfo(text: string): Parsed<GoVGPUInfo> {
  const parsed = parseJsonObject(text, '{"vGPURequests":[{"name":"gpu1","deviceName":"nvidia.com/…"}]}');
  if (!parsed.value) return { problems: parsed.problems };
  const problems: string[] = [];
  const raw = goField(parsed.value, 'vGPURequests');
  // Go leaves a missing list nil (no vGPU); only a present non-list is an error.
  const items = raw === undefined || raw === null ? [] : Array.isArray(raw) ? raw : null;
  if (items === null) return { problems: ['"vGPURequests" must be a list'] };
  const vGPURequests = entries(items, 'vGPURequests', problems).map(([where, r]) => ({
    name: field(r, 'name', 'string', where, problems) as string,
    deviceName: field(r, 'deviceName', 'string', where, problems) as string,
  }));
  return problems.length > 0 ? { problems } : { value: { vGPURequests }, problems };
}

const oneOf = (value: string, allowed: readonly string[]): boolean => value === '' || allowed.includes(value);
const quoted = (values: readonly string[]): string => values.join(', ');

export function diskInfoProblems(info: GoDiskInfo): string[] {
  const problems: string[] = [];
  if (info.disks.length === 0) problems.push('must list at least one disk');
  const bootOrders = new Map<number, number>();
  info.disks.forEach((d, i) => {
    const where = `disks[${i}]`;
    if (d.imageName === '' && d.storageClassName === '') {
      problems.push(`${where} needs an imageName (boot image) or a storageClassName (empty volume)`);
    }
    if (d.imageName !== '') {
      const bad = namespacedNameProblem(d.imageName);
      if (bad) problems.push(`${where}.imageName ${bad}`);
    }
    if (!(d.size > 0))
      problems.push(`${where}.size must be a whole number of GiB greater than 0 (got ${d.size})`);
    if (!oneOf(d.bus, DISK_BUSES)) {
      problems.push(`${where}.bus "${d.bus}" is not a disk bus (expected one of ${quoted(DISK_BUSES)})`);
    }
    if (d.type === 'cd-rom' && d.bus === 'virtio') {
      problems.push(`${where} is a cd-rom on bus virtio, which KubeVirt rejects (use sata or scsi)`);
    }
    problems.push(...diskStorageProblems(d, where));
    if (d.bootOrder > 0) {
      const other = bootOrders.get(d.bootOrder);
      if (other !== undefined)
        problems.push(`${where}.bootOrder ${d.bootOrder} is already used by disks[${other}]`);
      else bootOrders.set(d.bootOrder, i);
    }
  });
  return problems;
}

/** Values the Go driver takes and we take alike, that probably do not mean what was meant. */
export function diskInfoWarnings(info: GoDiskInfo): string[] {
  return info.disks.flatMap((d, i) =>
    oneOf(d.type, DISK_TYPES)
      ? []
      : [
          `disks[${i}].type "${d.type}" is neither disk nor cd-rom: it is created as a disk, as the Go driver does (Harvester's builder makes a CD-ROM only of "cd-rom")`,
        ],
  );
}

export function networkInfoProblems(info: GoNetworkInfo): string[] {
  const problems: string[] = [];
  if (info.interfaces.length === 0) problems.push('must list at least one interface');
  info.interfaces.forEach((n, i) => {
    const where = `interfaces[${i}]`;
    if (n.networkName === '')
      problems.push(`${where}.networkName is required (a NetworkAttachmentDefinition)`);
    else {
      const bad = namespacedNameProblem(n.networkName);
      if (bad) problems.push(`${where}.networkName ${bad}`);
    }
    if (n.macAddress !== '' && !MAC.test(n.macAddress)) {
      problems.push(
        `${where}.macAddress "${n.macAddress}" is not a MAC address (expected like 52:54:00:12:34:56)`,
      );
    }
    if (!oneOf(n.model, NETWORK_MODELS)) {
      problems.push(
        `${where}.model "${n.model}" is not a network model (expected one of ${quoted(NETWORK_MODELS)})`,
      );
    }
    if (!oneOf(n.type, INTERFACE_TYPES)) {
      problems.push(
        `${where}.type "${n.type}" cannot work: every type other than bridge is bound as masquerade, which KubeVirt refuses on a Multus network (networkName), so the Go driver's VM is refused too; use bridge or leave it empty`,
      );
    }
  });
  return problems;
}

/**
 * KubeVirt names each host device's libvirt alias after its name ("ua-hostdevice-<name>")
 * and libvirt refuses two equal aliases, so two requests with one name never start. The Go
 * driver passes names on as given; Rancher's UI sends an empty one when it knows no device
 * of the type, which runs alone but not twice. An empty name is therefore given one derived
 * from the device (vgpuDeviceNames); a name given twice is refused.
 */
export function vgpuInfoProblems(info: GoVGPUInfo): string[] {
  const problems: string[] = [];
  const firstWith = new Map<string, number>();
  info.vGPURequests.forEach((r, i) => {
    const where = `vGPURequests[${i}]`;
    if (r.name !== '') {
      const first = firstWith.get(r.name);
      if (first !== undefined) {
        problems.push(
          `${where}.name "${r.name}" is also vGPURequests[${first}]'s: both devices would get the libvirt alias ua-hostdevice-${r.name} and libvirt refuses a VM with two equal aliases, so it would never start (with the Go driver neither)`,
        );
      } else firstWith.set(r.name, i);
    }
    if (r.deviceName === '') {
      problems.push(
        `${where}.deviceName is required (the resource name, e.g. nvidia.com/NVIDIA_A2-2Q): KubeVirt finds no device for an empty one and the VM would never start (with the Go driver neither)`,
      );
    }
  });
  return problems;
}

/**
 * The host-device name of each vGPU request: its own, or for an empty one a name made of
 * its deviceName ("nvidia.com/NVIDIA_A2-2Q" -> "nvidia-com-NVIDIA_A2-2Q"), suffixed -2, -3…
 * when taken. Only [A-Za-z0-9_-], which Harvester's VMI mutator keeps as it is (it base32-
 * encodes other names). Stable: the same requests always get the same names.
 */
export function vgpuDeviceNames(info: GoVGPUInfo): string[] {
  const taken = new Set(info.vGPURequests.map((r) => r.name).filter((n) => n !== ''));
  return info.vGPURequests.map((r) => {
    if (r.name !== '') return r.name;
    const base = r.deviceName.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '') || 'vgpu';
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
    taken.add(name);
    return name;
  });
}
