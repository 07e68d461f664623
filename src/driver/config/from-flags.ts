// SetConfigFromFlags: flag values → the saved driver config (Go's field names and value
// forms), and every check that can be made before anything is created. The Go driver
// stops at the first problem and leaves most checks to the API server, which answers ten
// minutes into a create; here every problem is collected and named by its flag.
import { parseDiskInfo, parseNetworkInfo, parseVGPUInfo } from '../../harvester/disk-network-info.js';
import type { GoDriverConfig } from '../../harvester/config/go-config.js';
import { parseHostDeviceInfo } from '../../harvester/host-devices/host-devices.js';
import { parseIpPoolInfo } from '../../harvester/fixed-addresses/ip-pool.js';
import { parseKeyValues } from '../../harvester/user-metadata.js';
import { decodeBase64OrPlain } from '../../kube/kubeconfig-content.js';
import { FLAGS, type FlagSpec } from './flags.js';
import type { FlagValues } from '../machine-driver.js';
import type { KubeconfigTrust } from '../../kube/credential-content.js';
import { configProblems } from './checks.js';
import { defaultHarvesterMachineOptions, type DriverConfig } from './driver-config.js';
import { ConfigError, Problems } from './problems.js';
import { oversizeProblem } from './flag-limits.js';

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
    const oversize = oversizeProblem(spec, v);
    if (oversize) {
      this.problems.tooLarge(spec, oversize);
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

/**
 * Go's SetConfigFromFlags on a copy of `base` (a new driver: MachineName, StorePath),
 * then every check. Throws ConfigError listing all problems.
 */
export function configFromFlags(
  values: FlagValues,
  base: GoDriverConfig | DriverConfig,
  trust: KubeconfigTrust = 'credential',
): DriverConfig {
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
  // As in Go: only a size above 0 reserves memory; 0 and every negative value mean none.
  const reservedMiB = read.int(FLAGS.reservedMemorySize);
  if (reservedMiB > 0) cfg.ReservedMemorySize = `${reservedMiB}Mi`;
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

  const hostDeviceText = decodeBase64OrPlain(read.string(FLAGS.hostDeviceInfo));
  if (hostDeviceText !== '') {
    const parsed = parseHostDeviceInfo(hostDeviceText);
    problems.addAll(FLAGS.hostDeviceInfo, parsed.problems);
    if (parsed.value) cfg.HostDeviceInfo = parsed.value;
  }

  cfg.CPUPinning = read.bool(FLAGS.cpuPinning);
  cfg.IsolateEmulatorThread = read.bool(FLAGS.isolateEmulatorThread);
  cfg.EnableTPM = read.bool(FLAGS.enableTpm);
  cfg.BlockMultiQueue = read.bool(FLAGS.blockMultiQueue);
  cfg.IOThreadsPolicy = read.string(FLAGS.ioThreadsPolicy).trim();
  cfg.IOThreadCount = read.int(FLAGS.ioThreadCount);

  const ipPoolText = decodeBase64OrPlain(read.string(FLAGS.ipPoolInfo));
  const ipPool = ipPoolText.trim() !== '' ? parseIpPoolInfo(ipPoolText) : undefined;
  if (ipPool) problems.addAll(FLAGS.ipPoolInfo, ipPool.problems);
  const labels = parseKeyValues(read.string(FLAGS.vmLabels));
  problems.addAll(FLAGS.vmLabels, labels.problems);
  const annotations = parseKeyValues(read.string(FLAGS.vmAnnotations));
  problems.addAll(FLAGS.vmAnnotations, annotations.problems);

  cfg.HarvesterMachine = {
    CreateTimeoutSeconds: read.int(FLAGS.createTimeout),
    IPTimeoutSeconds: read.int(FLAGS.ipTimeout),
    RemoveTimeoutSeconds: read.int(FLAGS.removeTimeout),
    IPNetwork: read.string(FLAGS.ipNetwork),
    CloudInitInSecret: read.bool(FLAGS.cloudInitInSecret),
    IPPoolInfo: ipPool?.value ?? null,
    VMLabels: labels.value ?? {},
    VMAnnotations: annotations.value ?? {},
    // Set by Create; a new config from flags has none yet.
    FixedAddress: null,
  };

  // Type problems first; a flag with a type problem is not checked again below.
  const typeProblems = new Set(problems.list.map((p) => p.flag));
  for (const p of configProblems(cfg, unparsed, trust)) {
    if (!typeProblems.has(p.flag)) problems.list.push(p);
  }
  if (problems.list.length > 0) throw new ConfigError(problems.list);
  return cfg;
}
