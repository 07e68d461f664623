// Every check of a driver config that can be made before anything is created, whether it
// came from flags or from a saved config.json; each problem names its flag.
import { parseAffinity } from '../../harvester/affinity.js';
import { cloudConfigProblem } from '../../harvester/cloud-init/cloud-init.js';
import {
  diskInfoProblems,
  diskInfoWarnings,
  namespacedNameProblem,
  NETWORK_MODELS,
  networkInfoProblems,
  vgpuInfoProblems,
  DISK_BUSES,
} from '../../harvester/disk-network-info.js';
import type { GoDriverConfig } from '../../harvester/config/go-config.js';
import { hostDeviceInfoProblems } from '../../harvester/host-devices/host-devices.js';
import { ioThreadProblems } from '../../harvester/storage-options.js';
import { interfaceNameForNetwork } from '../../harvester/fixed-addresses/ip-address.js';
import { fixedNetworkProblems } from '../fixed-addresses/fixed-address-checks.js';
import { vmAnnotationProblems, vmLabelProblems } from '../../harvester/user-metadata.js';
import { isValidLabelValue } from '../../harvester/labels.js';
import { networkDataProblems } from '../../harvester/cloud-init/network-data.js';
import type { KubeconfigTrust } from '../../kube/credential-content.js';
import { kubeconfigProblems } from '../../kube/kubeconfig-content.js';
import { cliName, FLAGS, type FlagSpec } from './flags.js';
import type { DriverConfig } from './driver-config.js';
import { CLOUD_INIT_SECRET_LIMIT, formatSize } from './flag-limits.js';
import { clipValues, Problems, type ConfigProblem } from './problems.js';

/** The JSON-valued flags whose text did not parse: later checks would only repeat the news. */
export type Unparsed = ReadonlySet<'diskInfo' | 'networkInfo'>;

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
        `${reserved} MiB must be less than the memory size (${memory} MiB): Harvester's VM webhook refuses it, the guest would have no memory left`,
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
  if (cfg.HostDeviceInfo)
    problems.addAll(FLAGS.hostDeviceInfo, hostDeviceInfoProblems(cfg.HostDeviceInfo, cfg.VGPUInfo));
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
  // --harvester-network-type is saved and never used, by the Go driver as by us: any value goes.
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

function checkAccess(cfg: DriverConfig, problems: Problems, trust: KubeconfigTrust): void {
  if (cfg.KubeConfigContent !== '') {
    for (const p of kubeconfigProblems(cfg.KubeConfigContent, trust))
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
  // SSH user and port only matter to rancher-machine's SSH (never used by Rancher's create
  // jobs): the Go driver takes any value, and so do we (configWarnings says what will fail).
  if (!Number.isInteger(cfg.SSHPort)) {
    problems.add(FLAGS.sshPort, `must be a whole number (got ${cfg.SSHPort})`);
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
      `${what}is ${formatSize(cloudInitBytes)}; the cloud-init Secret holds at most 1 MiB`,
    );
  } else {
    if (cfg.UserData !== '') {
      const bad = cloudConfigProblem(cfg.UserData);
      if (bad) problems.add(FLAGS.userData, bad);
    }
    problems.addAll(FLAGS.networkData, networkDataProblems(cfg.NetworkData));
  }
  if (cfg.VMAffinity !== '') problems.addAll(FLAGS.vmAffinity, parseAffinity(cfg.VMAffinity).problems);
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

/**
 * Values the Go driver and we both take, but that will not do what was probably meant: logged
 * at create, each naming its flag.
 */
export function configWarnings(cfg: DriverConfig): string[] {
  const warnings: string[] = [];
  const warn = (spec: FlagSpec, phrase: string): void =>
    void warnings.push(`${cliName(spec)}: ${clipValues(phrase)}`);
  if (cfg.SSHPort < 0 || cfg.SSHPort > 65535) {
    warn(
      FLAGS.sshPort,
      `${cfg.SSHPort} is no TCP port: rancher-machine's SSH to the machine (start, restart, provisioning without a custom install script) will fail`,
    );
  }
  if (/[\s:]/.test(cfg.SSHUser)) {
    warn(
      FLAGS.sshUser,
      `"${cfg.SSHUser}" is no Linux user name (it has a space or a colon): cloud-init cannot create it, and SSH as it will fail`,
    );
  }
  if (cfg.DiskInfo) for (const w of diskInfoWarnings(cfg.DiskInfo)) warn(FLAGS.diskInfo, w);
  return warnings;
}

/**
 * Every problem of a config (from flags or a saved config.json), each naming its flag.
 * `trust` is whose the kubeconfig content is: a cloud credential's unless the program that
 * embeds the driver says it is its operator's own (the CLI).
 */
export function configProblems(
  cfg: DriverConfig,
  unparsed: Unparsed = new Set(),
  trust: KubeconfigTrust = 'credential',
): ConfigProblem[] {
  const problems = new Problems();
  checkAccess(cfg, problems, trust);
  checkResources(cfg, problems);
  checkDisks(cfg, problems, unparsed);
  for (const p of ioThreadProblems(cfg)) problems.add(FLAGS[p.field], p.phrase);
  checkNetworks(cfg, problems, unparsed);
  checkCloudInit(cfg, problems);
  checkTimeouts(cfg, problems);
  fixedNetworkProblems(cfg, problems);
  problems.addAll(FLAGS.vmLabels, vmLabelProblems(cfg.HarvesterMachine.VMLabels));
  problems.addAll(FLAGS.vmAnnotations, vmAnnotationProblems(cfg.HarvesterMachine.VMAnnotations));
  return problems.list;
}
