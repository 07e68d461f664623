// The driver object of config.json (SavedConfig), and the "freshest credential wins" rule
// that the Go driver applies in UnmarshalJSON, as a pure function of argv and the environment.

import { parseDiskInfo, parseNetworkInfo, parseVGPUInfo } from '../../harvester/disk-network-info.js';
import { parseHostDeviceInfo } from '../../harvester/host-devices/host-devices.js';
import {
  defaultHarvesterMachineOptions,
  newDriverConfig,
  type DriverConfig,
  type HarvesterMachineOptions,
} from './index.js';
import { FLAGS } from './flags.js';
import { renderOptions, STRUCTURED_OPTIONS, type StructuredOption } from './saved-options.js';
import type { GoDriverConfig } from '../../harvester/config/go-config.js';
import { decodeBase64OrPlain } from '../../kube/kubeconfig-content.js';
import type { CredentialSource as AccessCredentialSource } from '../../harvester-access/credential-error.js';

type FieldKind =
  'string' | 'int' | 'bool' | 'diskInfo' | 'networkInfo' | 'vgpuInfo' | 'hostDeviceInfo' | 'options';

/** Every field in json.Marshal order; ours (HarvesterMachine) last. */
const FIELDS: ReadonlyArray<readonly [keyof DriverConfig, FieldKind]> = [
  ['IPAddress', 'string'],
  ['IPv6Address', 'string'],
  ['MachineName', 'string'],
  ['SSHUser', 'string'],
  ['SSHPort', 'int'],
  ['SSHKeyPath', 'string'],
  ['StorePath', 'string'],
  ['SwarmMaster', 'bool'],
  ['SwarmHost', 'string'],
  ['SwarmDiscovery', 'string'],
  ['KubeConfigContent', 'string'],
  ['VMNamespace', 'string'],
  ['VMAffinity', 'string'],
  ['ClusterType', 'string'],
  ['ClusterID', 'string'],
  ['ClusterName', 'string'],
  ['ServerVersion', 'string'],
  ['CPU', 'int'],
  ['CPUModel', 'string'],
  ['MemorySize', 'string'],
  ['ReservedMemorySize', 'string'],
  ['DiskSize', 'string'],
  ['DiskBus', 'string'],
  ['ImageName', 'string'],
  ['DiskInfo', 'diskInfo'],
  ['KeyPairName', 'string'],
  ['SSHPrivateKeyPath', 'string'],
  ['SSHPublicKey', 'string'],
  ['SSHPassword', 'string'],
  ['AddUserToDockerGroup', 'bool'],
  ['NetworkType', 'string'],
  ['NetworkName', 'string'],
  ['NetworkModel', 'string'],
  ['NetworkInfo', 'networkInfo'],
  ['CloudConfig', 'string'],
  ['UserData', 'string'],
  ['NetworkData', 'string'],
  ['EnableEFI', 'bool'],
  ['EnableSecureBoot', 'bool'],
  ['VGPUInfo', 'vgpuInfo'],
  // Where docker-machine-driver-harvester#96 puts it; today's Go driver skips the key.
  ['HostDeviceInfo', 'hostDeviceInfo'],
  ['CPUPinning', 'bool'],
  ['IsolateEmulatorThread', 'bool'],
  ['EnableTPM', 'bool'],
  // harvester#11550's storage options: not in today's Go driver (docs/upstream/go-driver.md#storage-options).
  ['BlockMultiQueue', 'bool'],
  ['IOThreadsPolicy', 'string'],
  ['IOThreadCount', 'int'],
  ['HarvesterMachine', 'options'],
];

/**
 * Not a field of today's Go driver: left out while unset, so the config.json of a machine
 * without host devices is the Go driver's, key for key (plus HarvesterMachine). A Go
 * driver with #96 reads a missing key as nil, as it would read its own null.
 */
const OMITTED_WHEN_NULL: ReadonlySet<keyof DriverConfig> = new Set(['HostDeviceInfo']);
/**
 * The storage options, likewise: written only when set, so a machine without them has the
 * Go driver's config.json; a Go driver with them reads a missing key as its zero value.
 */
const OMITTED_WHEN_ZERO: ReadonlyMap<keyof DriverConfig, unknown> = new Map<keyof DriverConfig, unknown>([
  ['BlockMultiQueue', false],
  ['IOThreadsPolicy', ''],
  ['IOThreadCount', 0],
]);

const EXACT = new Map(FIELDS.map(([name, kind]) => [name as string, { name, kind }]));
const FOLDED = new Map(FIELDS.map(([name, kind]) => [name.toLowerCase(), { name, kind }]));

/**
 * The driver object of config.json (GetConfigRaw/SetConfigRaw), byte-compatible with the
 * Go driver's json.Marshal: BaseDriver fields flattened first, then the Harvester fields,
 * Go field names as keys, Go zero values when unset, null for nil pointers. Reading has
 * json.Unmarshal's semantics into an existing driver (absent keys keep their values, keys
 * match case-insensitively, null leaves a non-pointer field alone), and nothing is lost:
 * keys we don't know (a newer Go driver's) are kept verbatim and written back after ours,
 * and unknown keys inside DiskInfo/NetworkInfo/VGPUInfo/HostDeviceInfo survive as long as we don't
 * change that field.
 */
export interface SavedConfig {
  driver: DriverConfig;
  /** Keys this driver does not know, in their original order, as compact JSON text. */
  unknownFields: ReadonlyMap<string, string>;
  /** Object-valued fields as read: raw JSON, and our rendering of what we understood of it. */
  rawObjects: ReadonlyMap<string, { raw: string; understood: string }>;
}

/** A config.json driver object we cannot read; messages name fields, never their values. */
export class SavedConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`cannot read the saved driver config: ${problems.join('; ')}`);
    this.name = 'SavedConfigError';
  }
}

export function savedConfigFor(driver: DriverConfig): SavedConfig {
  return { driver, unknownFields: new Map(), rawObjects: new Map() };
}

// ---- raw JSON scanning ----

/** Index just past the JSON value starting at `start` (the text is known to be valid JSON). */
function endOfValue(text: string, start: number): number {
  const first = text[start];
  if (first !== '"' && first !== '{' && first !== '[') {
    let i = start;
    while (i < text.length && !/[\s,}\]]/.test(text[i] ?? '')) i++;
    return i;
  }
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      if (depth === 0) return i + 1;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}

/** Members of a JSON object text, in order, with each value's raw text. */
function members(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let i = text.indexOf('{') + 1;
  const skip = (): void => {
    while (i < text.length && /[\s,]/.test(text[i] ?? '')) i++;
  };
  for (skip(); i < text.length && text[i] !== '}'; skip()) {
    const keyEnd = endOfValue(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = text.indexOf(':', keyEnd) + 1;
    while (/\s/.test(text[i] ?? '')) i++;
    const valueEnd = endOfValue(text, i);
    out.push([key, text.slice(i, valueEnd)]);
    i = valueEnd;
  }
  return out;
}

/** Insignificant whitespace removed, as json.Marshal emits a json.RawMessage. */
function compact(raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] ?? '';
    if (c === '"') {
      const end = endOfValue(raw, i);
      out += raw.slice(i, end);
      i = end - 1;
    } else if (!/\s/.test(c)) out += c;
  }
  return out;
}

/** json.Marshal's escaping: JSON.stringify plus Go's HTML-safe escapes of < > & and U+2028/9. */
function goJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

// ---- object-valued fields ----

function renderObject(kind: FieldKind, value: unknown): string {
  if (value === null || value === undefined) return 'null';
  // Fixed key order: the Go structs' field order.
  switch (kind) {
    case 'diskInfo':
      return goJson({
        disks: (value as NonNullable<GoDriverConfig['DiskInfo']>).disks.map((d) => ({
          imageName: d.imageName,
          storageClassName: d.storageClassName,
          size: d.size,
          bootOrder: d.bootOrder,
          bus: d.bus,
          type: d.type,
          hotPlugAble: d.hotPlugAble,
          // The storage options: omitempty, as Rancher's form leaves them out while unset.
          ...(d.cache ? { cache: d.cache } : {}),
          ...(d.io ? { io: d.io } : {}),
          ...(d.dedicatedIOThread ? { dedicatedIOThread: true } : {}),
        })),
      });
    case 'networkInfo':
      return goJson({
        interfaces: (value as NonNullable<GoDriverConfig['NetworkInfo']>).interfaces.map((n) => ({
          networkName: n.networkName,
          macAddress: n.macAddress,
          model: n.model,
          type: n.type,
        })),
      });
    case 'vgpuInfo':
      return goJson({
        vGPURequests: (value as NonNullable<GoDriverConfig['VGPUInfo']>).vGPURequests.map((r) => ({
          name: r.name,
          deviceName: r.deviceName,
        })),
      });
    case 'hostDeviceInfo':
      // kubevirtv1.HostDevice: deviceName is omitempty.
      return goJson({
        hostDevices: (value as NonNullable<GoDriverConfig['HostDeviceInfo']>).hostDevices.map((d) =>
          d.deviceName ? { name: d.name, deviceName: d.deviceName } : { name: d.name },
        ),
      });
    case 'options':
      return goJson(renderOptions(value as HarvesterMachineOptions));
    case 'string':
    case 'int':
    case 'bool':
      return goJson(value);
  }
}

/** Go leaves a missing list nil; we read it as empty. */
function withList(raw: string, key: string): string {
  const obj = JSON.parse(raw) as Record<string, unknown>;
  // Not written again when present: JSON.stringify of hostile nesting overflows the stack.
  if (obj[key] !== undefined && obj[key] !== null) return raw;
  obj[key] = [];
  return JSON.stringify(obj);
}

function decodeObject(
  kind: FieldKind,
  raw: string,
  current: unknown,
  where: string,
  problems: string[],
): unknown {
  let parsed;
  try {
    parsed =
      kind === 'diskInfo'
        ? parseDiskInfo(withList(raw, 'disks'))
        : kind === 'networkInfo'
          ? parseNetworkInfo(withList(raw, 'interfaces'))
          : kind === 'vgpuInfo'
            ? parseVGPUInfo(raw)
            : parseHostDeviceInfo(withList(raw, 'hostDevices'));
  } catch (err) {
    // Nesting tens of thousands deep (hostile input) exhausts the stack of the JSON functions.
    if (!(err instanceof RangeError)) throw err;
    problems.push(
      `${where} is nested too deeply to be a ${kind === 'diskInfo' ? 'disk' : kind === 'networkInfo' ? 'network' : kind === 'vgpuInfo' ? 'vGPU' : 'host device'} list`,
    );
    return current;
  }
  if (parsed.value) return parsed.value;
  problems.push(...parsed.problems.map((p) => `${where} ${p}`));
  return current;
}

function decodeOptions(
  raw: unknown,
  current: HarvesterMachineOptions,
  problems: string[],
): HarvesterMachineOptions {
  const next = { ...defaultHarvesterMachineOptions(), ...current };
  const obj = raw as Record<string, unknown>;
  for (const key of Object.keys(next) as Array<keyof HarvesterMachineOptions>) {
    const v = obj[key];
    if (v === undefined) continue;
    const structured = STRUCTURED_OPTIONS[key as StructuredOption];
    if (structured) {
      const decoded = structured(v);
      if (decoded === undefined) problems.push(`HarvesterMachine.${key} has the wrong shape`);
      else (next as Record<string, unknown>)[key] = decoded.value;
      continue;
    }
    if (v === null) continue;
    if (typeof v !== typeof next[key] || (typeof v === 'number' && !Number.isInteger(v))) {
      problems.push(`HarvesterMachine.${key} has the wrong type`);
      continue;
    }
    (next as Record<string, unknown>)[key] = v;
  }
  return next;
}

function decodeField(
  name: keyof DriverConfig,
  kind: FieldKind,
  raw: string,
  driver: DriverConfig,
  problems: string[],
): void {
  const value: unknown = JSON.parse(raw);
  const target = driver as unknown as Record<string, unknown>;
  const isObjectKind =
    kind === 'diskInfo' || kind === 'networkInfo' || kind === 'vgpuInfo' || kind === 'hostDeviceInfo';
  if (value === null) {
    // Go: null into a pointer sets nil; into anything else it is a no-op.
    if (isObjectKind) target[name] = null;
    return;
  }
  const wrong = (expected: string): void => {
    problems.push(`${name} must be ${expected} (got ${Array.isArray(value) ? 'array' : typeof value})`);
  };
  switch (kind) {
    case 'string':
      if (typeof value === 'string') target[name] = value;
      else wrong('a string');
      return;
    case 'int':
      // Go's int rejects 1.0 and 1e3; test the literal, not the parsed number.
      if (/^-?\d+$/.test(raw) && Number.isSafeInteger(value)) target[name] = value;
      else wrong('a whole number');
      return;
    case 'bool':
      if (typeof value === 'boolean') target[name] = value;
      else wrong('true or false');
      return;
    case 'options':
      if (typeof value === 'object' && !Array.isArray(value)) {
        target[name] = decodeOptions(value, driver.HarvesterMachine, problems);
      } else wrong('an object');
      return;
    case 'diskInfo':
    case 'networkInfo':
    case 'vgpuInfo':
    case 'hostDeviceInfo':
      if (typeof value === 'object' && !Array.isArray(value)) {
        target[name] = decodeObject(kind, raw, target[name], name, problems);
      } else wrong('an object or null');
  }
}

/**
 * json.Unmarshal of a config.json driver object into `current` (or a new driver).
 * Throws SavedConfigError when a known field has the wrong type or the text is not a JSON object.
 */
export function parseSavedConfig(json: string | Uint8Array, current?: SavedConfig): SavedConfig {
  const text = typeof json === 'string' ? json : new TextDecoder('utf-8').decode(json);
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    throw new SavedConfigError(['it is not valid JSON']);
  }
  const base = current ?? savedConfigFor(newDriverConfig());
  if (whole === null) return base; // Go: unmarshalling null changes nothing
  if (typeof whole !== 'object' || Array.isArray(whole))
    throw new SavedConfigError(['it is not a JSON object']);

  const driver = structuredClone(base.driver);
  const unknownFields = new Map(base.unknownFields);
  const rawObjects = new Map(base.rawObjects);
  const problems: string[] = [];
  for (const [key, raw] of members(text)) {
    const field = EXACT.get(key) ?? FOLDED.get(key.toLowerCase());
    if (!field) {
      unknownFields.set(key, compact(raw));
      continue;
    }
    decodeField(field.name, field.kind, raw, driver, problems);
    if (field.kind !== 'string' && field.kind !== 'int' && field.kind !== 'bool') {
      rawObjects.set(field.name, {
        raw: compact(raw),
        understood: renderObject(field.kind, driver[field.name]),
      });
    }
  }
  if (problems.length > 0) throw new SavedConfigError(problems);
  return { driver, unknownFields, rawObjects };
}

/** json.Marshal of the driver: known fields in Go's order, then ours, then the unknown ones as read. */
export function serializeSavedConfig(saved: SavedConfig): string {
  const parts: string[] = [];
  for (const [name, kind] of FIELDS) {
    const value = saved.driver[name];
    if (OMITTED_WHEN_NULL.has(name) && value === null) continue;
    if (OMITTED_WHEN_ZERO.has(name) && value === OMITTED_WHEN_ZERO.get(name)) continue;
    let rendered: string;
    if (kind === 'string' || kind === 'int' || kind === 'bool') {
      rendered = goJson(value);
    } else {
      rendered = renderObject(kind, value ?? (kind === 'options' ? defaultHarvesterMachineOptions() : null));
      // Unchanged since read: write what was read, with the keys we do not know.
      const read = saved.rawObjects.get(name);
      if (read && read.understood === rendered) rendered = read.raw;
    }
    parts.push(`${goJson(name)}:${rendered}`);
  }
  for (const [key, raw] of saved.unknownFields) parts.push(`${goJson(key)}:${raw}`);
  return `{${parts.join(',')}}`;
}

// ---- the freshest credential ----

/** Where a config load found the kubeconfig (create flags are the one other source). */
export type CredentialSource = Exclude<AccessCredentialSource, 'flags'>;

/**
 * Flags in argv as rancher-machine's rpcdriver.GetDriverOpts finds them: any argument
 * starting with "-" is a flag (all leading dashes trimmed); its value follows "=" or is
 * the next argument when that does not start with "-"; a later occurrence wins. One fix:
 * Go keeps only the text up to a second "=", which cuts base64 padding off; we keep it all.
 */
export function flagsInArgv(argv: readonly string[]): Map<string, string | true> {
  const found = new Map<string, string | true>();
  argv.forEach((arg, i) => {
    if (!arg.startsWith('-')) return;
    const trimmed = arg.replace(/^-+/, '');
    const eq = trimmed.indexOf('=');
    const next = argv[i + 1];
    if (eq >= 0) found.set(trimmed.slice(0, eq), trimmed.slice(eq + 1));
    else if (next !== undefined && !next.startsWith('-')) found.set(trimmed, next);
    else found.set(trimmed, true);
  });
  return found;
}

/**
 * Rancher re-reads the cloud credential for every job and passes it in argv (create) or
 * the environment (rm), while config.json still holds the kubeconfig of creation time,
 * which may have expired since. The fresh one wins: `--harvester-kubeconfig-content` in
 * argv, else HARVESTER_KUBECONFIG_CONTENT, else the saved one; base64 or plain. An empty
 * value counts as not given (Go would wipe the saved kubeconfig with it). Returns the
 * source for a log line, never the value.
 */
export function applyFreshCredential<T extends GoDriverConfig>(
  cfg: T,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): { config: T; source: CredentialSource } {
  const fromArgv = flagsInArgv(argv).get(FLAGS.kubeconfigContent.name);
  if (typeof fromArgv === 'string' && fromArgv.trim() !== '') {
    return { config: { ...cfg, KubeConfigContent: decodeBase64OrPlain(fromArgv) }, source: 'argv' };
  }
  const fromEnv = env[FLAGS.kubeconfigContent.envVar];
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    return { config: { ...cfg, KubeConfigContent: decodeBase64OrPlain(fromEnv) }, source: 'env' };
  }
  return { config: cfg, source: 'saved' };
}
