// SetConfigFromFlags: flag values → the saved driver config (Go's field names and value
// forms), and every check that can be made before anything is created. The Go driver
// stops at the first problem and leaves most checks to the API server, which answers ten
// minutes into a create; here every problem is collected and named by its flag.
// No problem message quotes a secret (kubeconfig, password, user data).

import { cloudConfigProblem } from '../harvester/cloud-init.js';
import {
  diskInfoProblems,
  namespacedNameProblem,
  NETWORK_MODELS,
  networkInfoProblems,
  parseDiskInfo,
  parseNetworkInfo,
  parseVGPUInfo,
  vgpuInfoProblems,
  DISK_BUSES,
} from '../harvester/disk-network-info.js';
import { interfaceNameForNetwork } from '../harvester/ip-address.js';
import { isValidLabelValue } from '../harvester/labels.js';
import { networkDataProblems } from '../harvester/network-data.js';
import { cliName, FLAGS, GO_WAIT_SECONDS, RESERVED_MEMORY_UNSET, type FlagSpec } from './flags.js';
import type { GoDriverConfig } from './go-config.js';
import { decodeBase64OrPlain, kubeconfigProblems } from './kubeconfig-content.js';
import type { FlagValues } from './machine-driver.js';

/** Our settings that the Go driver has no field for; saved under one extra key, "HarvesterMachine". */
export interface HarvesterMachineOptions {
  CreateTimeoutSeconds: number;
  IPTimeoutSeconds: number;
  RemoveTimeoutSeconds: number;
  /** --harvester-ip-network; "" = the first interface with an address. */
  IPNetwork: string;
  CloudInitInSecret: boolean;
}

export type DriverConfig = GoDriverConfig & { HarvesterMachine: HarvesterMachineOptions };

export function defaultHarvesterMachineOptions(): HarvesterMachineOptions {
  return {
    CreateTimeoutSeconds: GO_WAIT_SECONDS,
    IPTimeoutSeconds: GO_WAIT_SECONDS,
    RemoveTimeoutSeconds: GO_WAIT_SECONDS,
    IPNetwork: '',
    CloudInitInSecret: false,
  };
}

/** The Go driver's NewDriver(hostName, storePath): Go zero values everywhere else. */
export function newDriverConfig(machineName = '', storePath = ''): DriverConfig {
  return {
    IPAddress: '',
    IPv6Address: '',
    MachineName: machineName,
    SSHUser: '',
    SSHPort: 0,
    SSHKeyPath: '',
    StorePath: storePath,
    SwarmMaster: false,
    SwarmHost: '',
    SwarmDiscovery: '',
    KubeConfigContent: '',
    VMNamespace: '',
    VMAffinity: '',
    ClusterType: '',
    ClusterID: '',
    ClusterName: '',
    ServerVersion: '',
    CPU: 0,
    CPUModel: '',
    MemorySize: '',
    ReservedMemorySize: '',
    DiskSize: '',
    DiskBus: '',
    ImageName: '',
    DiskInfo: null,
    KeyPairName: '',
    SSHPrivateKeyPath: '',
    SSHPublicKey: '',
    SSHPassword: '',
    AddUserToDockerGroup: false,
    NetworkType: '',
    NetworkName: '',
    NetworkModel: '',
    NetworkInfo: null,
    CloudConfig: '',
    UserData: '',
    NetworkData: '',
    EnableEFI: false,
    EnableSecureBoot: false,
    VGPUInfo: null,
    CPUPinning: false,
    IsolateEmulatorThread: false,
    EnableTPM: false,
    HarvesterMachine: defaultHarvesterMachineOptions(),
  };
}

export interface ConfigProblem {
  /** The flag the problem is about, e.g. "--harvester-disk-info". */
  flag: string;
  /** The whole sentence: "<flag>: <what is wrong and what is expected>". */
  message: string;
}

/** Invalid machine configuration; lists every problem found, each naming its flag. */
export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];
  constructor(problems: readonly ConfigProblem[]) {
    const lines = problems.map((p) => `  ${p.message}`).join('\n');
    super(
      `invalid machine configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${lines}`,
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * Problems quote the values they refuse; a hostile or mistaken value can be megabytes long
 * (a kubeconfig pasted into the wrong field). Long quoted values and long unbroken runs are
 * cut, and a message never exceeds MAX_PROBLEM_CHARS.
 */
const MAX_PROBLEM_CHARS = 1_000;
function clipValues(phrase: string): string {
  const clipped = phrase
    .replace(/"([^"]{61,})"/g, (_, v: string) => `"${v.slice(0, 60)}…" (${v.length} characters)`)
    .replace(/[^\s"]{81,}/g, (v) => `${v.slice(0, 80)}… (${v.length} characters)`);
  return clipped.length > MAX_PROBLEM_CHARS ? `${clipped.slice(0, MAX_PROBLEM_CHARS)}… (cut)` : clipped;
}

const KiB = 1024;
const MiB = 1024 * KiB;
/**
 * The most a flag may hold. Rancher passes flags as arguments of rancher-machine, and Linux
 * passes at most 128 KiB as one argument; the flags that can be whole documents (base64
 * allowed) also come from a file or a Secret (the kubeconfig), and 2 MiB is more than any
 * Kubernetes object can hold (a Secret holds at most 1 MiB, etcd takes 1.5 MiB a request).
 * Beyond these a value is a mistake or an attack, refused before it is decoded or parsed.
 */
const DOCUMENT_FLAG_LIMIT = {
  bytes: 2 * MiB,
  shown: '2 MiB',
  why: 'more than any Kubernetes object can hold',
};
const FLAG_LIMIT = { bytes: 128 * KiB, shown: '128 KiB', why: 'the most Linux passes as one argument' };
const DOCUMENT_FLAGS: ReadonlySet<FlagSpec> = new Set([
  FLAGS.kubeconfigContent,
  FLAGS.userData,
  FLAGS.networkData,
  FLAGS.vmAffinity,
]);
/** User data and network data go together into the cloud-init Secret. */
const CLOUD_INIT_SECRET_LIMIT = MiB;

function size(bytes: number): string {
  return bytes >= MiB ? `${(bytes / MiB).toFixed(1)} MiB` : `${Math.round(bytes / KiB)} KiB`;
}

class Problems {
  readonly list: ConfigProblem[] = [];
  /** Flags refused for their size: what else could be said of them follows from it. */
  private readonly oversized = new Set<FlagSpec>();
  add(spec: FlagSpec, phrase: string): void {
    if (this.oversized.has(spec)) return;
    const flag = cliName(spec);
    this.list.push({ flag, message: `${flag}: ${clipValues(phrase)}` });
  }
  tooLarge(spec: FlagSpec, phrase: string): void {
    this.add(spec, phrase);
    this.oversized.add(spec);
  }
  addAll(spec: FlagSpec, phrases: readonly string[]): void {
    for (const p of phrases) this.add(spec, p);
  }
}

/** Typed reads of RPCFlags values; absent → the flag's default, as rancher-machine fills them. */
class FlagReader {
  constructor(
    private readonly values: FlagValues,
    private readonly problems: Problems,
  ) {}

  string(spec: FlagSpec): string {
    const v = this.values.get(spec.name);
    if (v === undefined) return spec.kind === 'string' ? spec.defaultValue : '';
    if (typeof v !== 'string') {
      this.problems.add(spec, 'must be a string');
      return '';
    }
    const limit = DOCUMENT_FLAGS.has(spec) ? DOCUMENT_FLAG_LIMIT : FLAG_LIMIT;
    // Each UTF-16 unit is at least one byte: only a long value needs counting.
    if (v.length > limit.bytes / 4 && Buffer.byteLength(v) > limit.bytes) {
      this.problems.tooLarge(
        spec,
        `is ${size(Buffer.byteLength(v))}; at most ${limit.shown} is accepted (${limit.why})`,
      );
      return '';
    }
    return v;
  }

  int(spec: FlagSpec): number {
    const fallback = spec.kind === 'int' ? spec.defaultValue : 0;
    const v = this.values.get(spec.name);
    if (v === undefined) return fallback;
    if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
    if (typeof v === 'string' && /^[+-]?\d{1,15}$/.test(v.trim())) return Number(v.trim());
    const shown = typeof v === 'string' ? `"${v.slice(0, 40)}"` : typeof v;
    this.problems.add(spec, `must be a whole number (got ${shown})`);
    return fallback;
  }

  bool(spec: FlagSpec): boolean {
    const v = this.values.get(spec.name);
    if (v === undefined) return false;
    if (typeof v === 'boolean') return v;
    if (typeof v === 'string' && /^(true|false|1|0)$/i.test(v.trim())) return /^(true|1)$/i.test(v.trim());
    this.problems.add(spec, 'must be true or false');
    return false;
  }

  /** BaseDriver.SetSwarmConfigFromFlags reads these undeclared flags; missing means zero. */
  raw(name: string): unknown {
    return this.values.get(name);
  }
}

/** The JSON-valued flags whose text did not parse: later checks would only repeat the news. */
type Unparsed = ReadonlySet<'diskInfo' | 'networkInfo'>;

/**
 * Go's SetConfigFromFlags on a copy of `base` (a new driver: MachineName, StorePath),
 * then every check. Throws ConfigError listing all problems.
 */
export function configFromFlags(values: FlagValues, base: GoDriverConfig | DriverConfig): DriverConfig {
  const problems = new Problems();
  const read = new FlagReader(values, problems);
  const cfg: DriverConfig = {
    ...structuredClone(base),
    HarvesterMachine: defaultHarvesterMachineOptions(), // every option is set from its flag below
  };
  const unparsed = new Set<'diskInfo' | 'networkInfo'>();

  cfg.KubeConfigContent = decodeBase64OrPlain(read.string(FLAGS.kubeconfigContent));
  cfg.VMNamespace = read.string(FLAGS.vmNamespace);
  cfg.VMAffinity = decodeBase64OrPlain(read.string(FLAGS.vmAffinity));
  cfg.ClusterType = read.string(FLAGS.clusterType);
  cfg.ClusterID = read.string(FLAGS.clusterId);
  cfg.ClusterName = read.string(FLAGS.clusterName);
  cfg.CPU = read.int(FLAGS.cpuCount);
  cfg.CPUModel = read.string(FLAGS.cpuModel);
  cfg.MemorySize = `${read.int(FLAGS.memorySize)}Gi`;
  const reservedMiB = read.int(FLAGS.reservedMemorySize);
  if (reservedMiB > 0) cfg.ReservedMemorySize = `${reservedMiB}Mi`;
  else if (reservedMiB < RESERVED_MEMORY_UNSET) {
    problems.add(
      FLAGS.reservedMemorySize,
      `must be a number of MiB greater than 0, or -1 for none (got ${reservedMiB})`,
    );
  }
  cfg.DiskSize = String(read.int(FLAGS.diskSize));
  cfg.DiskBus = read.string(FLAGS.diskBus);
  cfg.ImageName = read.string(FLAGS.imageName);

  const diskInfoText = read.string(FLAGS.diskInfo);
  if (diskInfoText !== '') {
    const parsed = parseDiskInfo(diskInfoText);
    problems.addAll(FLAGS.diskInfo, parsed.problems);
    if (parsed.value) cfg.DiskInfo = parsed.value;
    else unparsed.add('diskInfo');
  }

  cfg.SSHUser = read.string(FLAGS.sshUser);
  cfg.SSHPort = read.int(FLAGS.sshPort);
  cfg.KeyPairName = read.string(FLAGS.keyPairName);
  cfg.SSHPrivateKeyPath = read.string(FLAGS.sshPrivateKeyPath);
  cfg.SSHPassword = read.string(FLAGS.sshPassword);
  cfg.NetworkType = read.string(FLAGS.networkType);
  cfg.NetworkName = read.string(FLAGS.networkName);
  cfg.NetworkModel = read.string(FLAGS.networkModel);

  const networkInfoText = read.string(FLAGS.networkInfo);
  if (networkInfoText !== '') {
    const parsed = parseNetworkInfo(networkInfoText);
    problems.addAll(FLAGS.networkInfo, parsed.problems);
    if (parsed.value) cfg.NetworkInfo = parsed.value;
    else unparsed.add('networkInfo');
  }

  cfg.CloudConfig = read.string(FLAGS.cloudConfig);
  cfg.UserData = decodeBase64OrPlain(read.string(FLAGS.userData));
  cfg.NetworkData = decodeBase64OrPlain(read.string(FLAGS.networkData));
  cfg.EnableEFI = read.bool(FLAGS.enableEfi);
  cfg.EnableSecureBoot = read.bool(FLAGS.enableSecureBoot);

  cfg.SwarmMaster = read.raw('swarm-master') === true;
  cfg.SwarmHost = typeof read.raw('swarm-host') === 'string' ? (read.raw('swarm-host') as string) : '';
  cfg.SwarmDiscovery =
    typeof read.raw('swarm-discovery') === 'string' ? (read.raw('swarm-discovery') as string) : '';

  const vgpuText = read.string(FLAGS.vgpuInfo);
  if (vgpuText !== '') {
    const parsed = parseVGPUInfo(vgpuText);
    problems.addAll(FLAGS.vgpuInfo, parsed.problems);
    if (parsed.value) cfg.VGPUInfo = parsed.value;
  }

  cfg.CPUPinning = read.bool(FLAGS.cpuPinning);
  cfg.IsolateEmulatorThread = read.bool(FLAGS.isolateEmulatorThread);
  cfg.EnableTPM = read.bool(FLAGS.enableTpm);

  cfg.HarvesterMachine = {
    CreateTimeoutSeconds: read.int(FLAGS.createTimeout),
    IPTimeoutSeconds: read.int(FLAGS.ipTimeout),
    RemoveTimeoutSeconds: read.int(FLAGS.removeTimeout),
    IPNetwork: read.string(FLAGS.ipNetwork),
    CloudInitInSecret: read.bool(FLAGS.cloudInitInSecret),
  };

  // Type problems first; a flag with a type problem is not checked again below.
  const typeProblems = new Set(problems.list.map((p) => p.flag));
  for (const p of configProblems(cfg, unparsed)) {
    if (!typeProblems.has(p.flag)) problems.list.push(p);
  }
  if (problems.list.length > 0) throw new ConfigError(problems.list);
  return cfg;
}

const DNS_LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const QUANTITY = /^(\d+)(Ki|Mi|Gi|Ti|Pi|Ei)$/;
const UNIT: Record<string, number> = {
  Ki: 1 / 1024,
  Mi: 1,
  Gi: 1024,
  Ti: 1024 ** 2,
  Pi: 1024 ** 3,
  Ei: 1024 ** 4,
};
/** Values the Go driver once knew (pod, dhcp) or that name an interface binding. Go ignores the flag. */
const NETWORK_TYPES = ['bridge', 'masquerade', 'dhcp', 'pod'];

/** Binary quantity in MiB ("4Gi" → 4096); undefined when not of that form. */
function mebibytes(quantity: string): number | undefined {
  const m = QUANTITY.exec(quantity);
  return m?.[1] && m[2] ? Number(m[1]) * (UNIT[m[2]] ?? 0) : undefined;
}

function checkResources(cfg: DriverConfig, problems: Problems): void {
  if (!Number.isInteger(cfg.CPU) || cfg.CPU < 1)
    problems.add(FLAGS.cpuCount, `must be at least 1 (got ${cfg.CPU})`);
  const memory = mebibytes(cfg.MemorySize);
  if (memory === undefined || memory <= 0) {
    problems.add(
      FLAGS.memorySize,
      `must be a number of GiB greater than 0 (got ${cfg.MemorySize || 'none'})`,
    );
  }
  if (cfg.ReservedMemorySize !== '') {
    const reserved = mebibytes(cfg.ReservedMemorySize);
    if (reserved === undefined || reserved <= 0) {
      problems.add(
        FLAGS.reservedMemorySize,
        `must be a number of MiB greater than 0 (got ${cfg.ReservedMemorySize})`,
      );
    } else if (memory !== undefined && memory > 0 && reserved >= memory) {
      problems.add(
        FLAGS.reservedMemorySize,
        `${reserved} MiB must be less than the memory size (${memory} MiB), or the guest has no memory left`,
      );
    }
  }
  if (cfg.CPUModel !== '' && /\s/.test(cfg.CPUModel)) problems.add(FLAGS.cpuModel, 'must not contain spaces');
  if (cfg.EnableSecureBoot && !cfg.EnableEFI) {
    problems.add(FLAGS.enableSecureBoot, 'requires --harvester-enable-efi (secure boot is a UEFI feature)');
  }
  if (cfg.IsolateEmulatorThread && !cfg.CPUPinning) {
    problems.add(
      FLAGS.isolateEmulatorThread,
      'requires --harvester-cpu-pinning (KubeVirt rejects it otherwise)',
    );
  }
  if (cfg.VGPUInfo) problems.addAll(FLAGS.vgpuInfo, vgpuInfoProblems(cfg.VGPUInfo));
}

function checkDisks(cfg: DriverConfig, problems: Problems, unparsed: Unparsed): void {
  const size = /^[+-]?\d+$/.test(cfg.DiskSize) ? Number(cfg.DiskSize) : NaN;
  if (Number.isNaN(size) || size < 0) {
    problems.add(FLAGS.diskSize, `must be a whole number of GiB (got ${cfg.DiskSize || 'none'})`);
  }
  if (cfg.DiskBus !== '' && !(DISK_BUSES as readonly string[]).includes(cfg.DiskBus)) {
    problems.add(
      FLAGS.diskBus,
      `"${cfg.DiskBus}" is not a disk bus (expected one of ${DISK_BUSES.join(', ')})`,
    );
  }
  if (cfg.DiskInfo) {
    problems.addAll(FLAGS.diskInfo, diskInfoProblems(cfg.DiskInfo));
  } else if (!unparsed.has('diskInfo')) {
    if (cfg.ImageName === '') {
      problems.add(FLAGS.imageName, 'is required (or give the disks with --harvester-disk-info)');
    } else {
      const bad = namespacedNameProblem(cfg.ImageName);
      if (bad) problems.add(FLAGS.imageName, bad);
    }
    if (size === 0)
      problems.add(FLAGS.diskSize, 'is required: the size of the boot disk in GiB, greater than 0');
  }
}

function checkNetworks(cfg: DriverConfig, problems: Problems, unparsed: Unparsed): void {
  if (cfg.NetworkModel !== '' && !(NETWORK_MODELS as readonly string[]).includes(cfg.NetworkModel)) {
    problems.add(
      FLAGS.networkModel,
      `"${cfg.NetworkModel}" is not a network model (expected one of ${NETWORK_MODELS.join(', ')})`,
    );
  }
  if (cfg.NetworkType !== '' && !NETWORK_TYPES.includes(cfg.NetworkType)) {
    problems.add(
      FLAGS.networkType,
      `"${cfg.NetworkType}" is not a network type (expected one of ${NETWORK_TYPES.join(', ')})`,
    );
  }
  if (cfg.NetworkInfo) {
    problems.addAll(FLAGS.networkInfo, networkInfoProblems(cfg.NetworkInfo));
  } else if (!unparsed.has('networkInfo')) {
    if (cfg.NetworkName === '') {
      problems.add(FLAGS.networkName, 'is required (or give the interfaces with --harvester-network-info)');
    } else {
      const bad = namespacedNameProblem(cfg.NetworkName);
      if (bad) problems.add(FLAGS.networkName, bad);
    }
  }
  const ipNetwork = cfg.HarvesterMachine.IPNetwork;
  if (ipNetwork !== '' && !unparsed.has('networkInfo') && !interfaceNameForNetwork(cfg, ipNetwork)) {
    problems.add(
      FLAGS.ipNetwork,
      `"${ipNetwork}" is none of the machine's networks (a network name or nic-<i>)`,
    );
  }
}

function checkAccess(cfg: DriverConfig, problems: Problems): void {
  if (cfg.KubeConfigContent !== '') {
    for (const p of kubeconfigProblems(cfg.KubeConfigContent))
      problems.add(FLAGS.kubeconfigContent, `the kubeconfig ${p}`);
  }
  if (!DNS_LABEL.test(cfg.VMNamespace)) {
    problems.add(
      FLAGS.vmNamespace,
      `"${cfg.VMNamespace}" is not a namespace name (lowercase letters, digits and -, at most 63)`,
    );
  }
  if (cfg.ClusterName !== '' && !isValidLabelValue(cfg.ClusterName)) {
    problems.add(FLAGS.clusterName, 'must be a valid label value (at most 63 letters, digits, -, _ or .)');
  }
  if (cfg.SSHUser === '' || /[\s:]/.test(cfg.SSHUser)) {
    problems.add(FLAGS.sshUser, 'must be a user name (not empty, no spaces or colons)');
  }
  if (!Number.isInteger(cfg.SSHPort) || cfg.SSHPort < 1 || cfg.SSHPort > 65535) {
    problems.add(FLAGS.sshPort, `must be a port between 1 and 65535 (got ${cfg.SSHPort})`);
  }
  if (cfg.KeyPairName !== '' && cfg.SSHPrivateKeyPath === '') {
    problems.add(
      FLAGS.sshPrivateKeyPath,
      'is required with --harvester-key-pair-name (the private key of that Harvester key pair)',
    );
  }
}

function checkCloudInit(cfg: DriverConfig, problems: Problems): void {
  const cloudInitBytes = Buffer.byteLength(cfg.UserData) + Buffer.byteLength(cfg.NetworkData);
  if (cloudInitBytes > CLOUD_INIT_SECRET_LIMIT) {
    const what = cfg.NetworkData === '' ? '' : `with ${cliName(FLAGS.networkData)} `;
    problems.add(
      FLAGS.userData,
      `${what}is ${size(cloudInitBytes)}; the cloud-init Secret holds at most 1 MiB`,
    );
  } else {
    if (cfg.UserData !== '') {
      const bad = cloudConfigProblem(cfg.UserData);
      if (bad) problems.add(FLAGS.userData, bad);
    }
    problems.addAll(FLAGS.networkData, networkDataProblems(cfg.NetworkData));
  }
  if (cfg.VMAffinity !== '') {
    let affinity: unknown;
    try {
      affinity = JSON.parse(cfg.VMAffinity);
    } catch {
      problems.add(FLAGS.vmAffinity, 'is not valid JSON (plain or base64) of a Kubernetes affinity');
      return;
    }
    if (affinity === null || typeof affinity !== 'object' || Array.isArray(affinity)) {
      problems.add(FLAGS.vmAffinity, 'must be a JSON object like {"podAntiAffinity":{…}}');
      return;
    }
    for (const key of ['nodeAffinity', 'podAffinity', 'podAntiAffinity']) {
      const v = (affinity as Record<string, unknown>)[key];
      if (v !== undefined && v !== null && (typeof v !== 'object' || Array.isArray(v))) {
        problems.add(FLAGS.vmAffinity, `${key} must be an object`);
      }
    }
  }
}

function checkTimeouts(cfg: DriverConfig, problems: Problems): void {
  const o = cfg.HarvesterMachine;
  const check = (spec: FlagSpec, seconds: number): void => {
    if (!Number.isInteger(seconds) || seconds < 1)
      problems.add(spec, `must be a number of seconds ≥ 1 (got ${seconds})`);
  };
  check(FLAGS.createTimeout, o.CreateTimeoutSeconds);
  check(FLAGS.ipTimeout, o.IPTimeoutSeconds);
  check(FLAGS.removeTimeout, o.RemoveTimeoutSeconds);
}

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;

/**
 * What every operation needs before it may address Harvester: the VM's name and namespace.
 * A saved config.json can hold anything; an empty name would turn a GET of the VM into a
 * list and a DELETE into a delete of the whole collection.
 */
export function identityProblems(cfg: GoDriverConfig): ConfigProblem[] {
  const problems = new Problems();
  const list = problems.list;
  if (!DNS_SUBDOMAIN.test(cfg.MachineName)) {
    list.push({
      flag: 'MachineName',
      message: `MachineName: ${clipValues(`"${cfg.MachineName}"`)} is not a VM name (lowercase letters, digits, - and ., at most 253)`,
    });
  }
  if (!DNS_LABEL.test(cfg.VMNamespace)) {
    problems.add(
      FLAGS.vmNamespace,
      `"${cfg.VMNamespace}" is not a namespace name (lowercase letters, digits and -, at most 63)`,
    );
  }
  return list;
}

/** Every problem of a config (from flags or a saved config.json), each naming its flag. */
export function configProblems(cfg: DriverConfig, unparsed: Unparsed = new Set()): ConfigProblem[] {
  const problems = new Problems();
  checkAccess(cfg, problems);
  checkResources(cfg, problems);
  checkDisks(cfg, problems, unparsed);
  checkNetworks(cfg, problems, unparsed);
  checkCloudInit(cfg, problems);
  checkTimeouts(cfg, problems);
  return problems.list;
}
