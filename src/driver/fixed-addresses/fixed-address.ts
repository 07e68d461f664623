// A machine's fixed address (--harvester-ip-pool-info) on Harvester. Two sources:
// - 'pool': the driver hands addresses out itself. The lock is the apiserver: one ConfigMap
//   per address (address-claims.ts), created create-if-absent before the VM, owned by the
//   VM once it exists, so the garbage collector frees it with the VM. The order (claim, VM,
//   adopt) is what keeps it safe under retries, crashes and concurrent creates.
// - 'harvester-ippool': the network has an IPPool of vm-dhcp-controller. The driver pins the
//   interface's MAC; the add-on binds that MAC to an address of its pool when the VM appears
//   and its DHCP serves it (docs/upstream/vm-dhcp-controller.md#how-a-vm-gets-its-address).
import crypto from 'node:crypto';
import {
  ANNOTATION_FIXED_ADDRESS,
  claimObject,
  claimProblems,
  claimsOfMachine,
  claimsOfNetwork,
  describeHolders,
  firstFree,
  fixedAddressAnnotation,
  fixedAddressOfVm,
  isAbandoned,
  readClaim,
  type AddressClaim,
  type FixedAddress,
} from '../../harvester/fixed-addresses/address-claims.js';
import { fixedNetworkData } from '../../harvester/fixed-addresses/fixed-network-data.js';
import {
  describePool,
  describesAddresses,
  poolAddresses,
  poolInterface,
  poolNetworkId,
  poolPrefix,
  type IpPoolInfo,
} from '../../harvester/fixed-addresses/ip-pool.js';
import { namespacedName, nicName } from '../../harvester/names.js';
import { ipPoolOfNetwork, ipPoolPrefix, type VmDhcpIpPool } from '../../harvester/fixed-addresses/vm-dhcp.js';
import { isAlreadyExists, isConflict, isKubeError } from '../../kube/errors.js';
import type { KubeObject } from '../../kube/resources.js';
import { fixedNetworkRequest, interfaceCount, userMac } from './fixed-address-checks.js';
import type { ConfigMap, Vm } from '../../harvester-access/harvester-api.js';
import { isOurAbandonedVm } from '../operations/adopt.js';
import { vmRef, type OperationContext } from '../operations/context.js';
import { waitForPoolAddress } from '../operations/waits.js';
import { keyText, keyTextOf } from '../../api/object-key.js';

const FLAG = '--harvester-ip-pool-info';

/** The pool has no address left: refused, naming the pool and who holds its addresses. */
export class AddressPoolExhaustedError extends Error {
  override readonly name = 'AddressPoolExhaustedError';
}

/**
 * A claim naming this machine that may not be used: its address is not the pool's, its MAC
 * is not one interface's, or it replaced the claim this machine made (another uid). Anyone
 * who may create ConfigMaps in the VM namespace can write one (docs/security.md#the-inputs).
 */
export class AddressClaimRefusedError extends Error {
  override readonly name = 'AddressClaimRefusedError';
}

const claimRef = (cm: ConfigMap): string => keyTextOf(cm);

/** Refuses a claim this machine would use when it fails the checks, naming it and the fields. */
function checkClaim(source: AddressSource, entry: { cm: ConfigMap; claim: AddressClaim }): void {
  const problems = claimProblems(entry.claim, source.info);
  if (problems.length > 0)
    throw new AddressClaimRefusedError(
      `${FLAG}: ${problems.join('; ')}; it names machine ${entry.claim.machine} but is not used (no address or MAC of it reaches the VM): delete it if no machine made it (harvester-machine leftovers lists it)`,
    );
}

/** A ConfigMap by the recorded claim's name that is not the claim this machine made. */
function replacedClaim(cm: ConfigMap, recorded: FixedAddress): AddressClaimRefusedError {
  return new AddressClaimRefusedError(
    `${FLAG}: address claim ConfigMap ${claimRef(cm)} is not the claim this machine made for ${recorded.address} (its uid ${cm.metadata.uid ?? '(none)'}, the machine's ${recorded.claimUid ?? '(none)'}): someone replaced it, so it is not used; remove the machine and create it again`,
  );
}

/** The VM of an earlier attempt records its address with the uid of the claim made again. */
async function rebindVm(ctx: OperationContext, vm: Vm, fixed: FixedAddress): Promise<void> {
  try {
    await ctx.api.patchVmAnnotations(vm, { [ANNOTATION_FIXED_ADDRESS]: fixedAddressAnnotation(fixed) });
  } catch (err) {
    ctx.log.warn(
      `Could not record the new claim of ${fixed.address} on VM ${vmRef(ctx.config)} (${(err as Error).message}); the machine's saved state has it`,
    );
  }
}

/** Where the machine's address comes from, as found on Harvester before anything is made. */
export type AddressSource =
  | { kind: 'pool'; info: IpPoolInfo; network: string }
  | {
      kind: 'harvester-ippool';
      info: IpPoolInfo;
      network: string;
      ipPool: { namespace: string; name: string };
    };

/** The network's own IP pool decides; a pool described in the flag must not fight it. */
export async function addressSource(ctx: OperationContext, info: IpPoolInfo): Promise<AddressSource> {
  const network = poolNetworkId(info, ctx.config.VMNamespace);
  const { namespace, name } = namespacedName(network, ctx.config.VMNamespace);
  const nad = await ctx.api.findNetwork(namespace, name);
  if (!nad)
    throw new Error(`${FLAG}: network ${network} not found (network-attachment-definitions.k8s.cni.cncf.io)`);
  const ipPool = ipPoolOfNetwork(nad.metadata.labels);
  if (ipPool && describesAddresses(info)) {
    throw new Error(
      `${FLAG}: network ${network} is served by Harvester's IP pool ${keyText(ipPool.namespace, ipPool.name)} (vm-dhcp-controller); leave "range" and "cidr" out to take the address from it, or the driver's addresses would collide with the ones it hands out`,
    );
  }
  if (ipPool) {
    // The add-on looks the network up by the name the VM gives it, as written.
    const nic = poolInterface(info, ctx.config) ?? nicName(0);
    const onVm = ctx.config.NetworkInfo
      ? (ctx.config.NetworkInfo.interfaces[Number(nic.slice('nic-'.length))]?.networkName ?? '')
      : ctx.config.NetworkName;
    if (!onVm.includes('/'))
      throw new Error(
        `${FLAG}: give the machine's network as ${network} (with its namespace): Harvester's IP pool ${keyText(ipPool.namespace, ipPool.name)} finds a VM's network by the name the VM gives it`,
      );
    return { kind: 'harvester-ippool', info, network, ipPool };
  }
  if (!describesAddresses(info)) {
    throw new Error(
      `${FLAG}: network ${network} has no Harvester IP pool (vm-dhcp-controller); describe the addresses with "range" or "cidr"`,
    );
  }
  return { kind: 'pool', info, network };
}

/** A random MAC, locally administered and unicast (what KubeVirt and libvirt take for any NIC). */
export function randomMac(): string {
  const bytes = crypto.randomBytes(6);
  bytes[0] = ((bytes[0] ?? 0) & 0xfc) | 0x02;
  return [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** Every NIC's MAC: the operator's, the existing VM's (a continued create), else a new one. */
function pinnedMacs(ctx: OperationContext, existing: Vm | undefined): Record<string, string> {
  const onVm = new Map(
    (existing?.spec.template.spec?.domain.devices.interfaces ?? []).map((i) => [i.name, i.macAddress ?? '']),
  );
  const macs: Record<string, string> = {};
  for (let i = 0; i < interfaceCount(ctx.config); i++) {
    const nic = nicName(i);
    macs[nic] = userMac(ctx.config, i) || onVm.get(nic) || randomMac();
  }
  return macs;
}

/** What Create needs of the fixed address before it builds the VM. */
export interface PreparedAddress {
  source: AddressSource;
  nic: string;
  macs: Record<string, string>;
  /** Known before the VM for 'pool'; after it (the add-on's binding) for 'harvester-ippool'. */
  fixed?: FixedAddress;
  claim?: ConfigMap;
  /** This create made the claim (so a failure before the VM undoes it). */
  claimedNow: boolean;
}

function fixedOf(source: AddressSource, nic: string, mac: string, claim: AddressClaim): FixedAddress {
  return {
    address: claim.address,
    prefix: poolPrefix(source.info) ?? 32,
    interface: nic,
    mac,
    network: source.network,
    source: 'pool',
    holder: claim.name,
    ...(claim.uid ? { claimUid: claim.uid } : {}),
  };
}

async function networkClaims(
  ctx: OperationContext,
  network: string,
): Promise<Array<{ cm: ConfigMap; claim: AddressClaim }>> {
  const cms = await ctx.api.listConfigMaps(ctx.config.VMNamespace, claimsOfNetwork(network));
  return cms.flatMap((cm) => {
    const claim = readClaim(cm);
    return claim && claim.network === network ? [{ cm, claim }] : [];
  });
}

/** The claims that hold their address (an abandoned one does not), and the abandoned ones. */
export async function holdingClaims(
  ctx: OperationContext,
  network: string,
): Promise<{
  holding: Array<{ cm: ConfigMap; claim: AddressClaim }>;
  abandoned: Array<{ cm: ConfigMap; claim: AddressClaim }>;
}> {
  const claims = await networkClaims(ctx, network);
  const now = Date.now();
  const holding: typeof claims = [];
  const abandoned: typeof claims = [];
  for (const entry of claims) {
    const old = isAbandoned(entry.claim, now, false);
    // Only an old unowned claim is worth the look-up of its machine's VM.
    const vmExists = old ? Boolean(await ctx.api.findVm(ctx.config.VMNamespace, entry.claim.machine)) : true;
    (old && !vmExists ? abandoned : holding).push(entry);
  }
  return { holding, abandoned };
}

/** Takes one free address: create-if-absent of its claim, in the pool's order. */
async function claimFree(
  ctx: OperationContext,
  source: AddressSource,
  nic: string,
  mac: string,
): Promise<ConfigMap> {
  const ns = ctx.config.VMNamespace;
  const { holding, abandoned } = await holdingClaims(ctx, source.network);
  const held = new Set(holding.map((e) => e.claim.address));
  const candidates = poolAddresses(source.info);
  for (let i = firstFree(candidates, held); i >= 0; i = firstFree(candidates, held, i + 1)) {
    const address = candidates[i] ?? '';
    const stale = abandoned.find((e) => e.claim.address === address);
    if (stale) {
      ctx.log.info(
        `Taking over address ${address}: its claim by ${stale.claim.machine} was never adopted by a VM`,
      );
      // Only the version read: a claim adopted or taken over meanwhile is left alone.
      await ctx.api.deleteConfigMap(stale.cm, { sameVersion: true }).catch((err: unknown) => {
        if (!isKubeError(err, 'Conflict', 'NotFound')) throw err;
      });
    }
    try {
      return await ctx.api.createConfigMap(
        claimObject(ns, ctx.config.MachineName, { address, network: source.network, mac, interface: nic }),
      );
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      held.add(address); // another create took it first: the next one
    }
  }
  const now = await networkClaims(ctx, source.network);
  throw new AddressPoolExhaustedError(
    `${FLAG}: address pool ${describePool(source.info, ns)} has no free address for machine ${ctx.config.MachineName}: ${candidates.length} address${candidates.length === 1 ? '' : 'es'}, held by ${describeHolders(now.map((e) => e.claim).sort((a, b) => (a.address < b.address ? -1 : 1)))}`,
  );
}

/**
 * Before the VM: where the address comes from, the MACs, and (pool) the claim. A VM left
 * by an earlier attempt keeps what it has; a claim left by one (same machine) is taken again.
 */
export async function prepareFixedAddress(ctx: OperationContext, info: IpPoolInfo): Promise<PreparedAddress> {
  const cfg = ctx.config;
  const source = await addressSource(ctx, info);
  const nic = poolInterface(info, cfg) ?? nicName(0);
  const existingVm = await ctx.api.findVm(cfg.VMNamespace, cfg.MachineName);
  const existing = existingVm && isOurAbandonedVm(existingVm, cfg) ? existingVm : undefined;
  const macs = pinnedMacs(ctx, existing);
  const mac = macs[nic] ?? randomMac();
  if (source.kind === 'harvester-ippool') return { source, nic, macs, claimedNow: false };

  const recorded = existing ? fixedAddressOfVm(existing.metadata.annotations) : undefined;
  const mine = (await networkClaims(ctx, source.network)).filter((e) => e.claim.machine === cfg.MachineName);
  // The earlier attempt's VM names its claim, and (since the uid is recorded) which one.
  const named = recorded ? mine.find((e) => e.claim.name === recorded.holder) : undefined;
  if (recorded && named && recorded.claimUid && named.claim.uid !== recorded.claimUid)
    throw replacedClaim(named.cm, recorded);
  const keep = recorded ? named : mine.sort((a, b) => (a.claim.address < b.claim.address ? -1 : 1))[0];
  if (keep) checkClaim(source, keep);
  // Claims of this machine from attempts that lost a race with another attempt: never adopted.
  // One that fails the checks was not made by an attempt of this machine: left alone.
  for (const extra of mine) {
    if (extra === keep || extra.claim.owner) continue;
    if (claimProblems(extra.claim, source.info).length > 0) {
      ctx.log.warn(
        `Address claim ConfigMap ${claimRef(extra.cm)} names this machine but is not one of its claims (${claimProblems(extra.claim, source.info).join('; ')}): not used, left alone`,
      );
      continue;
    }
    await ctx.api.deleteConfigMap(extra.cm, { sameVersion: true }).catch(() => false);
  }
  if (keep) {
    ctx.log.info(
      `Address ${keep.claim.address} is held for this machine from an earlier attempt; continuing with it`,
    );
    // The VM of an earlier attempt keeps the MAC it records; a claim's counts only before a VM.
    const keptMac = recorded ? recorded.mac : keep.claim.mac;
    return {
      source,
      nic,
      macs: { ...macs, [nic]: keptMac },
      claim: keep.cm,
      fixed: fixedOf(source, nic, keptMac, keep.claim),
      claimedNow: false,
    };
  }
  if (recorded) {
    // The VM of an earlier attempt has an address whose claim is gone: claim that one again.
    const cm = await ctx.api
      .createConfigMap(claimObject(cfg.VMNamespace, cfg.MachineName, recorded))
      .catch((err: unknown) => {
        if (isAlreadyExists(err))
          throw new Error(
            `${FLAG}: VM ${vmRef(cfg)} from an earlier attempt has address ${recorded.address}, which another machine holds now; remove the machine and create it again`,
            { cause: err },
          );
        throw err;
      });
    const claim = readClaim(cm);
    if (!claim) throw new Error(`${FLAG}: the claim of ${recorded.address} could not be read back`);
    const fixed = fixedOf(source, nic, recorded.mac, claim);
    if (existing) await rebindVm(ctx, existing, fixed);
    return { source, nic, macs: { ...macs, [nic]: recorded.mac }, claim: cm, fixed, claimedNow: true };
  }
  const cm = await claimFree(ctx, source, nic, mac);
  const claim = readClaim(cm);
  if (!claim) throw new Error(`${FLAG}: the claim ${cm.metadata.name} could not be read back`);
  ctx.log.info(`Claimed address ${claim.address} of ${describePool(info, cfg.VMNamespace)} for this machine`);
  return { source, nic, macs, claim: cm, fixed: fixedOf(source, nic, mac, claim), claimedNow: true };
}

/** The network data the VM gets; throws when it conflicts (the checks refused that before). */
export function networkDataFor(ctx: OperationContext, prepared: PreparedAddress): string {
  const request = fixedNetworkRequest(ctx.config, prepared.source.info, prepared.fixed?.address, {
    nic: prepared.macs[prepared.nic] ?? '',
    ...(prepared.macs[nicName(0)] ? { first: prepared.macs[nicName(0)] ?? '' } : {}),
  });
  const rendered = fixedNetworkData(ctx.config.NetworkData, request);
  if (!('text' in rendered)) throw new Error(`--harvester-network-data: ${rendered.problems.join('; ')}`);
  return rendered.text;
}

/**
 * After createOrContinue: when the VM is one an earlier (or concurrent) attempt of this
 * machine made, its recorded address wins; a claim this attempt made for another address is
 * released, so the VM never owns two.
 */
export async function settleWithVm(
  ctx: OperationContext,
  prepared: PreparedAddress,
  vm: Vm,
): Promise<PreparedAddress> {
  const recorded = fixedAddressOfVm(vm.metadata.annotations);
  const same =
    recorded?.holder === prepared.fixed?.holder &&
    (!recorded?.claimUid || recorded.claimUid === prepared.fixed?.claimUid);
  if (prepared.source.kind !== 'pool' || !recorded || same) return prepared;
  await releaseClaim(ctx, prepared);
  ctx.log.info(`VM ${vmRef(ctx.config)} was made with address ${recorded.address}; continuing with it`);
  const found = await ctx.api.findConfigMap(ctx.config.VMNamespace, recorded.holder);
  if (found) {
    // Only the claim the VM records: this machine's, of its address, with its uid.
    const claim = readClaim(found);
    if (
      !claim ||
      claim.machine !== ctx.config.MachineName ||
      claim.address !== recorded.address ||
      (recorded.claimUid !== undefined && found.metadata.uid !== recorded.claimUid)
    )
      throw replacedClaim(found, recorded);
    return {
      ...prepared,
      fixed: { ...recorded, claimUid: found.metadata.uid ?? '' },
      claim: found,
      claimedNow: false,
    };
  }
  const cm = await ctx.api.createConfigMap(
    claimObject(ctx.config.VMNamespace, ctx.config.MachineName, recorded),
  );
  const fixed = { ...recorded, claimUid: cm.metadata.uid ?? '' };
  await rebindVm(ctx, vm, fixed);
  return { ...prepared, fixed, claim: cm, claimedNow: false };
}

/** The claim is owned by the VM from now on: the garbage collector frees it with the VM. */
export async function adoptClaim(ctx: OperationContext, prepared: PreparedAddress, vm: Vm): Promise<void> {
  let cm = prepared.claim;
  const { uid, name } = vm.metadata;
  if (!cm || !uid) return;
  for (let attempt = 1; ; attempt++) {
    if ((cm.metadata.ownerReferences ?? []).some((o) => o.uid === uid)) return;
    const owner = { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: name ?? '', uid };
    try {
      await ctx.api.setConfigMapOwner(cm, [owner]);
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= 3) throw err;
      const fresh = await ctx.api.findConfigMap(cm.metadata.namespace ?? '', cm.metadata.name);
      if (!fresh || fresh.metadata.uid !== cm.metadata.uid)
        throw new Error(
          `${FLAG}: the claim ${cm.metadata.name} of this machine's address was deleted before its VM could own it`,
          { cause: err },
        );
      cm = fresh;
    }
  }
}

/** Undoes a claim this create made, when the create fails before its VM exists. */
export async function releaseClaim(ctx: OperationContext, prepared: PreparedAddress): Promise<void> {
  if (!prepared.claim || !prepared.claimedNow) return;
  try {
    if (await ctx.api.deleteConfigMap(prepared.claim, { sameVersion: true }))
      ctx.log.info(`Released address ${prepared.fixed?.address ?? ''}: the machine was not created`);
  } catch (err) {
    // An unowned claim is taken over after its grace; say so, keep the first error.
    ctx.log.warn(
      `Could not release the claim ${prepared.claim.metadata.name} (${(err as Error).message}); its address is free again after 10 minutes`,
    );
  }
}

/** After the VM exists: the address, from the claim or from the add-on's binding. */
export async function fixedAddressOf(
  ctx: OperationContext,
  prepared: PreparedAddress,
  vm: Vm,
): Promise<FixedAddress> {
  if (prepared.fixed) return prepared.fixed;
  if (prepared.source.kind !== 'harvester-ippool') throw new Error(`${FLAG}: no address was claimed`);
  const { namespace, name } = prepared.source.ipPool;
  const mac = prepared.macs[prepared.nic] ?? '';
  const address = await waitForPoolAddress(ctx, mac, keyText(namespace, name), vm);
  const pool: (VmDhcpIpPool & KubeObject) | undefined = await ctx.api
    .findVmDhcpIpPool(namespace, name)
    .catch(() => undefined);
  return {
    address,
    prefix: pool ? ipPoolPrefix(pool) : 32,
    interface: prepared.nic,
    mac,
    network: prepared.source.network,
    source: 'harvester-ippool',
    holder: keyText(namespace, name),
  };
}

/**
 * Remove's part, after the VM is gone: the machine's claims that its VM never owned (a
 * create that stopped half-way). Owned ones went with the VM (the garbage collector). One
 * labelled list of this machine's claims: its cost does not depend on the namespace's VMs.
 */
export async function freeMachineClaims(ctx: OperationContext): Promise<void> {
  const cfg = ctx.config;
  if (!cfg.HarvesterMachine.IPPoolInfo && !cfg.HarvesterMachine.FixedAddress) return;
  try {
    const cms = await ctx.api.listConfigMaps(cfg.VMNamespace, claimsOfMachine(cfg.MachineName));
    const bound = cfg.HarvesterMachine.FixedAddress;
    for (const cm of cms) {
      const claim = readClaim(cm);
      if (!claim || claim.machine !== cfg.MachineName) continue;
      if (bound?.claimUid && claim.name === bound.holder && claim.uid !== bound.claimUid) {
        ctx.log.warn(
          `Address claim ConfigMap ${claimRef(cm)} is not the claim this machine made (another uid): left alone`,
        );
        continue;
      }
      if (await ctx.api.deleteConfigMap(cm))
        ctx.log.info(`Released address ${claim.address} (${claim.network})`);
    }
  } catch (err) {
    // The VM is gone: a removal must not fail (and be retried forever) over a claim the garbage
    // collector frees with it, or that any create takes over after its grace.
    ctx.log.warn(
      `The VM is removed, but its address claims could not be checked (${(err as Error).message}); an owned claim goes with the VM, others are listed by harvester-machine leftovers`,
    );
  }
}
