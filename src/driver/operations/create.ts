// Create: SSH key, the VM (built by the pure builder), the cloud-init Secret owned by
// it, then wait until it runs and reports an IP. Rerunning after a half-done create
// continues with what exists instead of failing or duplicating.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isAlreadyExists } from '../../kube/errors.js';
import { ConfigError, configProblems, configWarnings } from '../config/index.js';
import { withVmOwnerReference } from '../../harvester/cloud-init/cloud-init.js';
import { namespacedName } from '../../harvester/names.js';
import type { Secret } from '../../harvester/types.js';
import { buildVirtualMachine } from '../../harvester/vm-spec.js';
import { registerSecret } from '../../log/redact.js';
import { generateSshKeyPairInBackground, readPublicKeyFor, writeSshKeyPair } from '../ssh-keys.js';
import type { Vm } from '../../harvester-access/harvester-api.js';
import {
  fixedAddressAnnotation,
  ANNOTATION_FIXED_ADDRESS,
} from '../../harvester/fixed-addresses/address-claims.js';
import { isOurAbandonedVm } from './adopt.js';
import {
  adoptClaim,
  fixedAddressOf,
  networkDataFor,
  prepareFixedAddress,
  releaseClaim,
  settleWithVm,
  type PreparedAddress,
} from '../fixed-addresses/fixed-address.js';
import { addressesOf, fixedIsNodeAddress } from './machine-status.js';
import { vmRef, type OperationContext } from './context.js';
import { waitForIp, waitRunning } from './waits.js';
import { keyText } from '../../api/object-key.js';

const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyz0123456789';
function randomSuffix(): string {
  return Array.from(crypto.randomBytes(5), (b) => ALPHANUMERIC[b % ALPHANUMERIC.length]).join('');
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}

/**
 * The Go driver's createKeyPair, with its log lines (Rancher's job log shows them). A key
 * left by an earlier attempt is reused, as libmachine's GenerateSSHKey does.
 */
async function ensureSshKey(ctx: OperationContext): Promise<void> {
  const cfg = ctx.config;
  const keyPath = ctx.sshKeyPath;
  await fs.mkdir(path.dirname(keyPath), { recursive: true, mode: 0o700 });
  cfg.SSHKeyPath = keyPath;
  if (!cfg.SSHPrivateKeyPath) {
    ctx.log.info('Creating New SSH Key');
    if (!((await exists(keyPath)) && (await exists(`${keyPath}.pub`)))) {
      await writeSshKeyPair(keyPath, await (ctx.newSshKey ?? generateSshKeyPairInBackground)());
    }
    cfg.SSHPublicKey = await readPublicKeyFor(keyPath);
    ctx.log.info(`Using public Key: ${keyPath}.pub`);
    return;
  }
  ctx.log.info(`Using SSHPrivateKeyPath: ${cfg.SSHPrivateKeyPath}`);
  if (path.resolve(cfg.SSHPrivateKeyPath) !== path.resolve(keyPath)) {
    const key = await fs.readFile(cfg.SSHPrivateKeyPath, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new Error(
        `--harvester-ssh-private-key-path ${cfg.SSHPrivateKeyPath}: cannot read the key (${err.code ?? err.message})`,
      );
    });
    registerSecret(key);
    await fs.writeFile(keyPath, key, { mode: 0o600 });
    await fs.chmod(keyPath, 0o600);
  }
  if (cfg.KeyPairName) {
    if (!cfg.SSHPublicKey) {
      const { namespace, name } = namespacedName(cfg.KeyPairName, cfg.VMNamespace);
      cfg.SSHPublicKey = (await ctx.api.findKeyPair(namespace, name))?.spec?.publicKey ?? '';
    }
    ctx.log.info(`Using existing harvester key pair: ${cfg.KeyPairName}`);
    return;
  }
  const publicKey = await readPublicKeyFor(cfg.SSHPrivateKeyPath);
  await fs.writeFile(`${keyPath}.pub`, publicKey + '\n', { mode: 0o644 });
  cfg.SSHPublicKey = publicKey;
  ctx.log.info(`Using public Key: ${keyPath}.pub`);
}

async function imageStorageClasses(ctx: OperationContext): Promise<Map<string, string>> {
  const cfg = ctx.config;
  const images = cfg.DiskInfo ? cfg.DiskInfo.disks.map((d) => d.imageName).filter(Boolean) : [cfg.ImageName];
  const classes = new Map<string, string>();
  for (const image of images) {
    const { namespace, name } = namespacedName(image, cfg.VMNamespace);
    const found = await ctx.api.findImage(namespace, name);
    if (found?.status?.storageClassName) classes.set(keyText(namespace, name), found.status.storageClassName);
  }
  return classes;
}

async function createOrContinue(ctx: OperationContext, vm: Vm): Promise<Vm> {
  try {
    return await ctx.api.createVm(vm);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const existing = await ctx.api.findVm(ctx.config.VMNamespace, ctx.config.MachineName);
    if (existing && isOurAbandonedVm(existing, ctx.config)) {
      ctx.log.info(`VM ${vmRef(ctx.config)} exists from an earlier attempt; continuing with it`);
      return existing;
    }
    throw new Error(
      `machine ${ctx.config.MachineName} already exists in namespace ${ctx.config.VMNamespace}`,
      { cause: err },
    );
  }
}

async function ensureCloudInitSecret(ctx: OperationContext, secret: Secret, vm: Vm): Promise<void> {
  const owned = withVmOwnerReference(secret, {
    ...vm,
    metadata: { ...vm.metadata, name: vm.metadata.name },
  });
  try {
    await ctx.api.createSecret(owned);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const current = await ctx.api.findSecret(
      secret.metadata.namespace ?? ctx.config.VMNamespace,
      secret.metadata.name,
    );
    if (current)
      await ctx.api.updateSecret({
        ...owned,
        metadata: { ...owned.metadata, resourceVersion: current.metadata.resourceVersion },
      });
  }
}

export async function createMachine(ctx: OperationContext): Promise<void> {
  const cfg = ctx.config;
  // PreCreateCheck checks this too, but a config loaded from config.json (SetConfigRaw) can
  // reach Create without it: nothing may be created from a config that fails the checks.
  const problems = configProblems(cfg, undefined, ctx.kubeconfigTrust);
  if (problems.length > 0) throw new ConfigError(problems);
  for (const warning of configWarnings(cfg)) ctx.log.warn(warning);
  await ensureSshKey(ctx);
  const cloudConfigContent = cfg.CloudConfig
    ? await fs.readFile(cfg.CloudConfig, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw new Error(
          `--harvester-cloud-config ${cfg.CloudConfig}: cannot read the file (${err.code ?? err.message})`,
        );
      })
    : undefined;
  const classes = await imageStorageClasses(ctx);
  const build = (prepared?: PreparedAddress) =>
    buildVirtualMachine(cfg, {
      ...(cloudConfigContent !== undefined ? { cloudConfigContent } : {}),
      random: randomSuffix,
      imageStorageClass: (id) => classes.get(id),
      cloudInitInSecret: cfg.HarvesterMachine.CloudInitInSecret,
      userLabels: cfg.HarvesterMachine.VMLabels,
      userAnnotations: cfg.HarvesterMachine.VMAnnotations,
      ...(prepared
        ? {
            macAddresses: prepared.macs,
            networkData: networkDataFor(ctx, prepared),
            ...(prepared.fixed
              ? { vmAnnotations: { [ANNOTATION_FIXED_ADDRESS]: fixedAddressAnnotation(prepared.fixed) } }
              : {}),
          }
        : {}),
    });
  const pool = cfg.HarvesterMachine.IPPoolInfo;
  // A VM that cannot be built is refused before an address is taken for it.
  let built = build();
  let prepared: PreparedAddress | undefined;
  let vm: Vm;
  try {
    if (pool) {
      prepared = await prepareFixedAddress(ctx, pool);
      built = build(prepared);
    }
    const secret = built.cloudInitSecret;
    ctx.log.info(
      `Creating VM ${vmRef(cfg)}${secret ? ` (cloud-init in Secret ${keyText(cfg.VMNamespace, secret.metadata.name)})` : ''}`,
    );
    vm = await createOrContinue(ctx, built.vm);
  } catch (err) {
    if (prepared) await releaseClaim(ctx, prepared);
    throw err;
  }
  // From here the VM exists: what it holds goes with it (Remove, or the garbage collector).
  if (prepared) {
    prepared = await settleWithVm(ctx, prepared, vm);
    await adoptClaim(ctx, prepared, vm);
    // The claim (by uid) is bound in the machine's state from now on: Remove uses only that one.
    if (prepared.fixed) cfg.HarvesterMachine.FixedAddress = prepared.fixed;
  }
  if (built.cloudInitSecret) await ensureCloudInitSecret(ctx, built.cloudInitSecret, vm);

  const running = await waitRunning(ctx, 'create');
  if (prepared) {
    const fixed = await fixedAddressOf(ctx, prepared, vm);
    cfg.HarvesterMachine.FixedAddress = fixed;
    if (fixedIsNodeAddress(ctx)) {
      // Known without the guest agent: the address is the one the machine was given.
      cfg.IPAddress = fixed.address;
      cfg.IPv6Address = '';
      ctx.log.info(`Get machine ip: ${cfg.IPAddress}`);
      return;
    }
  }
  const vmi = await waitForIp(ctx, 'create', running);
  const addresses = addressesOf(ctx, vmi);
  cfg.IPAddress = addresses?.ipv4 ?? addresses?.ipv6 ?? '';
  cfg.IPv6Address = addresses?.ipv6 ?? '';
  ctx.log.info(`Get machine ip: ${cfg.IPAddress}`);
}
