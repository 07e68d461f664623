// PreCreateCheck's part for --harvester-ip-pool-info: the network's IP pool (if it has one)
// and whether the pool has an address left, refused naming the pool and what holds its
// addresses. Two creates at once can both pass this for the last address; Create's claim
// decides between them (fixed-address.ts).
import { claimProblems, describeHolders } from '../../harvester/fixed-addresses/address-claims.js';
import { describePool, poolAddresses } from '../../harvester/fixed-addresses/ip-pool.js';
import { describeIpPool, ipPoolUsage } from '../../harvester/fixed-addresses/vm-dhcp.js';
import { isForbidden, KubeError } from '../../kube/errors.js';
import type { OperationContext } from '../operations/context.js';
import { addressSource, holdingClaims, type AddressSource } from './fixed-address.js';
import { keyText } from '../../api/object-key.js';

const FLAG = '--harvester-ip-pool-info';

async function checkHarvesterPool(
  ctx: OperationContext,
  source: Extract<AddressSource, { kind: 'harvester-ippool' }>,
  problems: string[],
): Promise<void> {
  const { namespace, name } = source.ipPool;
  let pool;
  try {
    pool = await ctx.api.findVmDhcpIpPool(namespace, name);
  } catch (err) {
    if (!isForbidden(err)) throw err;
    ctx.log.warn(
      `${FLAG}: Harvester's IP pool ${keyText(namespace, name)} not checked before create: the credential may not get ippools.network.harvesterhci.io in ${namespace}; the pool tells at create if it has no address left`,
    );
    return;
  }
  if (!pool) {
    problems.push(
      `network ${source.network} names Harvester's IP pool ${keyText(namespace, name)}, which does not exist (${FLAG})`,
    );
    return;
  }
  if (pool.spec?.paused) {
    problems.push(`Harvester's IP pool ${describeIpPool(pool)} is paused: it hands out no address (${FLAG})`);
    return;
  }
  const { held, available } = ipPoolUsage(pool);
  if (available === 0) {
    const owners = await macOwners(ctx);
    const holders = held
      .slice(0, 6)
      .map((h) => `${h.address} (${owners.get(h.mac.toLowerCase()) ?? `MAC ${h.mac}`})`);
    problems.push(
      `Harvester's IP pool ${describeIpPool(pool)} has no free address: held by ${holders.join(', ')}${held.length > 6 ? ` and ${held.length - 6} more` : ''} (${FLAG})`,
    );
  }
}

/** Which VM of the machine's namespace has which MAC, from the add-on's records (best effort). */
async function macOwners(ctx: OperationContext): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  try {
    const cfgs = await ctx.api.listVmNetworkConfigs(ctx.config.VMNamespace);
    for (const c of cfgs)
      for (const n of c.spec?.networkConfigs ?? [])
        if (n.macAddress)
          owners.set(
            n.macAddress.toLowerCase(),
            `VM ${keyText(ctx.config.VMNamespace, c.spec?.vmName ?? c.metadata.name)}`,
          );
  } catch {
    // Without the right to list them the MACs are named instead.
  }
  return owners;
}

export async function checkFixedAddress(ctx: OperationContext, problems: string[]): Promise<void> {
  const info = ctx.config.HarvesterMachine.IPPoolInfo;
  if (!info) return;
  let source: AddressSource;
  try {
    source = await addressSource(ctx, info);
  } catch (err) {
    if (err instanceof KubeError) throw err;
    problems.push((err as Error).message.replace(`${FLAG}: `, '') + ` (${FLAG})`);
    return;
  }
  if (source.kind === 'harvester-ippool') return checkHarvesterPool(ctx, source, problems);
  const { holding } = await holdingClaims(ctx, source.network);
  const held = new Set(holding.map((e) => e.claim.address));
  const candidates = poolAddresses(info);
  // An earlier attempt of this machine holds one already: Create continues with it, the
  // lowest, if it passes the checks (a claim anyone could have written).
  const mine = holding
    .filter((e) => e.claim.machine === ctx.config.MachineName)
    .sort((a, b) => (a.claim.address < b.claim.address ? -1 : 1));
  if (mine[0]) {
    for (const p of claimProblems(mine[0].claim, info)) problems.push(`${p} (${FLAG})`);
    return;
  }
  if (candidates.every((a) => held.has(a))) {
    const inPool = holding.filter((e) => candidates.includes(e.claim.address)).map((e) => e.claim);
    problems.push(
      `address pool ${describePool(info, ctx.config.VMNamespace)} has no free address: ${candidates.length} address${candidates.length === 1 ? '' : 'es'}, held by ${describeHolders(inPool.sort((a, b) => (a.address < b.address ? -1 : 1)))} (${FLAG})`,
    );
  }
}
