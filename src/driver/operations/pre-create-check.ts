// PreCreateCheck: everything Create needs must exist on Harvester before anything is
// made. Every problem is found (not only the first) and each names its object and flag.
import { configProblems, ConfigError } from '../config/index.js';
import { namespacedName } from '../../harvester/names.js';
import { isOurAbandonedVm } from './adopt.js';
import { checkFixedAddress } from '../fixed-addresses/fixed-address-check.js';
import { checkHostDevices } from '../host-devices/host-device-check.js';
import { vmRef, type OperationContext } from './context.js';
import { keyText } from '../../api/object-key.js';

export class PreCreateCheckError extends Error {
  override readonly name = 'PreCreateCheckError';
  constructor(readonly problems: readonly string[]) {
    super(
      `pre-create check failed (${problems.length} problem${problems.length === 1 ? '' : 's'}): ${problems.join('; ')}`,
    );
  }
}

function validated(conditions: Array<{ type: string; status: string }> | undefined): boolean {
  return (conditions ?? []).some((c) => c.type === 'validated' && c.status === 'True');
}

type Problems = string[];

async function checkServer(ctx: OperationContext, problems: Problems): Promise<void> {
  const cfg = ctx.config;
  const version = await ctx.api.findSetting('server-version');
  if (!version) {
    problems.push(
      `Harvester at ${ctx.api.server} has no settings.harvesterhci.io server-version: is the kubeconfig for a Harvester cluster?`,
    );
    return;
  }
  cfg.ServerVersion = version.value || version.default || '';
  if (cfg.ServerVersion.startsWith('v0.1.0')) {
    problems.push(`Harvester ${cfg.ServerVersion} is not supported; v0.2.0 or later is required`);
  }
}

async function checkNoOtherVm(ctx: OperationContext, problems: Problems): Promise<void> {
  const cfg = ctx.config;
  const existing = await ctx.api.findVm(cfg.VMNamespace, cfg.MachineName);
  if (existing && !isOurAbandonedVm(existing, cfg)) {
    problems.push(
      `machine ${cfg.MachineName} already exists in namespace ${cfg.VMNamespace} (VM ${vmRef(cfg)} was not created for this machine)`,
    );
  } else if (existing) {
    ctx.log.warn(
      `VM ${vmRef(cfg)} exists from an earlier create that did not finish; Create will continue with it`,
    );
  }
}

async function checkKeyPair(ctx: OperationContext, problems: Problems): Promise<void> {
  const cfg = ctx.config;
  if (!cfg.KeyPairName) return;
  const { namespace, name } = namespacedName(cfg.KeyPairName, cfg.VMNamespace);
  const keyPair = await ctx.api.findKeyPair(namespace, name);
  if (!keyPair) problems.push(`key pair ${keyText(namespace, name)} (--harvester-key-pair-name) not found`);
  else if (!validated(keyPair.status?.conditions))
    problems.push(`keypair ${name} is not validated (--harvester-key-pair-name)`);
  else cfg.SSHPublicKey = keyPair.spec?.publicKey ?? '';
}

async function checkDisks(ctx: OperationContext, problems: Problems): Promise<void> {
  const cfg = ctx.config;
  const images = cfg.DiskInfo
    ? cfg.DiskInfo.disks
        .filter((d) => d.imageName)
        .map((d) => ({ image: d.imageName, flag: '--harvester-disk-info' }))
    : [{ image: cfg.ImageName, flag: '--harvester-image-name' }];
  for (const { image, flag } of images) {
    const { namespace, name } = namespacedName(image, cfg.VMNamespace);
    const found = await ctx.api.findImage(namespace, name);
    if (!found) problems.push(`image ${keyText(namespace, name)} (${flag}) not found`);
    else if (!found.status?.storageClassName) {
      problems.push(
        `image ${keyText(namespace, name)} (${flag}) has no storage class yet: is it still downloading, or did its import fail?`,
      );
    }
  }
  for (const disk of cfg.DiskInfo?.disks ?? []) {
    if (disk.storageClassName && !(await ctx.api.findStorageClass(disk.storageClassName))) {
      problems.push(`storage class ${disk.storageClassName} (--harvester-disk-info) not found`);
    }
  }
}

async function checkNetworks(ctx: OperationContext, problems: Problems): Promise<void> {
  const cfg = ctx.config;
  const networks = cfg.NetworkInfo
    ? cfg.NetworkInfo.interfaces
        .filter((i) => i.networkName)
        .map((i) => ({ network: i.networkName, flag: '--harvester-network-info' }))
    : cfg.NetworkName
      ? [{ network: cfg.NetworkName, flag: '--harvester-network-name' }]
      : [];
  for (const { network, flag } of networks) {
    const { namespace, name } = namespacedName(network, cfg.VMNamespace);
    if (!(await ctx.api.findNetwork(namespace, name))) {
      problems.push(
        `network ${keyText(namespace, name)} (${flag}) not found (network-attachment-definitions.k8s.cni.cncf.io)`,
      );
    }
  }
}

export async function preCreateCheck(ctx: OperationContext): Promise<void> {
  const configIssues = configProblems(ctx.config, undefined, ctx.kubeconfigTrust);
  if (configIssues.length > 0) throw new ConfigError(configIssues);
  // The checks' requests go out at once (through Rancher's proxy each is a round trip); the
  // host-device check needs the server's version, so it follows checkServer. Each check has
  // its own list: the problems come in the order of the checks, whatever answers first.
  const checks = [
    checkServer,
    checkNoOtherVm,
    checkKeyPair,
    checkDisks,
    checkNetworks,
    checkHostDevices,
    checkFixedAddress,
  ];
  const found = checks.map((): Problems => []);
  const into = (check: (typeof checks)[number]): Problems => found[checks.indexOf(check)] ?? [];
  await Promise.all([
    checkServer(ctx, into(checkServer)).then(() => checkHostDevices(ctx, into(checkHostDevices))),
    ...checks
      .filter((c) => c !== checkServer && c !== checkHostDevices)
      .map((check) => check(ctx, into(check))),
  ]);
  const problems = found.flat();
  if (problems.length > 0) throw new PreCreateCheckError(problems);
}
