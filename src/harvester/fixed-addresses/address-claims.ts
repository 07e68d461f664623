// The driver's lock on an address: one ConfigMap per address of a network, in the VM's
// namespace, named for the network and the address (claimName), created create-if-absent:
// whoever creates it holds the address, an AlreadyExists means someone else does. Once the
// VM exists the claim is owned by it, so Kubernetes' garbage collector frees the address
// with the VM whatever happens to the driver. Pure: the objects, reading them back, and the
// decisions.
import { formatLabelValue } from '../labels.js';
import { claimName, networkKey, poolAddressProblem, type IpPoolInfo } from './ip-pool.js';
import { unicastMacProblem } from './mac-address.js';
import type { ObjectMeta } from '../types.js';
import { keyText, keyTextOf } from '../../api/object-key.js';

/** On every claim: the network's key, so one list finds the network's claims. */
export const LABEL_ADDRESS_CLAIM = 'harvester-machine.io/address-claim';
/** On every claim: the machine holding it (a label value: hashed when the name is not one). */
export const LABEL_CLAIM_MACHINE = 'harvester-machine.io/machine';
/** On the VM: its fixed address as JSON (FixedAddress), so a second create and inspect find it. */
export const ANNOTATION_FIXED_ADDRESS = 'harvester-machine.io/fixed-address';

/**
 * A claim without an owner is a create that stopped between the claim and its VM (or before
 * it adopted the claim). After this long, with no VM of its machine, its address is taken
 * over: no create step between the claim and the VM takes longer than the Go driver's whole
 * create timeout.
 */
export const UNOWNED_CLAIM_GRACE_MS = 10 * 60_000;

export interface ConfigMapObject {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: ObjectMeta;
  data?: Record<string, string>;
}

/** Where a machine's fixed address came from, as saved and as the VM's annotation says it. */
export interface FixedAddress {
  address: string;
  prefix: number;
  /** The VM interface: nic-<i>. */
  interface: string;
  mac: string;
  /** "namespace/name" of the network. */
  network: string;
  /** 'pool': the driver's claim; 'harvester-ippool': an IPPool of vm-dhcp-controller. */
  source: 'pool' | 'harvester-ippool';
  /** The claim's name (pool) or the IPPool's "namespace/name". */
  holder: string;
  /**
   * The uid of the claim this machine made or took (pool): a ConfigMap of the claim's name
   * with another uid was made by someone else and is never this machine's. Absent on what
   * earlier releases recorded.
   */
  claimUid?: string;
}

export interface AddressClaim {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion: string;
  created: number;
  network: string;
  address: string;
  machine: string;
  mac: string;
  interface: string;
  /** The VM owning it, when it was adopted. */
  owner?: { name: string; uid: string };
}

export function claimObject(
  namespace: string,
  machine: string,
  fixed: Pick<FixedAddress, 'address' | 'network' | 'mac' | 'interface'>,
): ConfigMapObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: claimName(fixed.network, fixed.address),
      namespace,
      labels: {
        [LABEL_ADDRESS_CLAIM]: networkKey(fixed.network),
        [LABEL_CLAIM_MACHINE]: formatLabelValue(machine),
      },
    },
    data: {
      network: fixed.network,
      address: fixed.address,
      machine,
      mac: fixed.mac,
      interface: fixed.interface,
    },
  };
}

/** A claim as read back; undefined for a ConfigMap that is not one (or is broken). */
export function readClaim(cm: {
  metadata: Partial<ObjectMeta>;
  data?: Record<string, string>;
}): AddressClaim | undefined {
  const d = cm.data ?? {};
  const { name, namespace, uid, resourceVersion, creationTimestamp } = cm.metadata;
  if (!name || !namespace || !d['address'] || !d['network'] || !d['machine']) return undefined;
  if (name !== claimName(d['network'], d['address'])) return undefined;
  const owner = (cm.metadata.ownerReferences ?? []).find((o) => o.kind === 'VirtualMachine');
  return {
    name,
    namespace,
    uid: uid ?? '',
    resourceVersion: resourceVersion ?? '',
    created: creationTimestamp ? Date.parse(creationTimestamp) : 0,
    network: d['network'],
    address: d['address'],
    machine: d['machine'],
    mac: d['mac'] ?? '',
    interface: d['interface'] ?? '',
    ...(owner ? { owner: { name: owner.name, uid: owner.uid } } : {}),
  };
}

/**
 * Why a claim read from the VM namespace may not be used for this machine, each a phrase
 * naming the claim and the field: anyone who may create ConfigMaps there can write one that
 * names the machine, so its address must be one the pool hands out and its MAC one
 * interface's (docs/security.md#the-inputs). Empty when it may be used.
 */
export function claimProblems(claim: AddressClaim, info: IpPoolInfo): string[] {
  const which = `address claim ConfigMap ${keyText(claim.namespace, claim.name)}`;
  const problems: string[] = [];
  const address = poolAddressProblem(info, claim.address);
  if (address) problems.push(`${which}: its "address" ${claim.address} ${address}`);
  const mac = unicastMacProblem(claim.mac);
  if (mac) problems.push(`${which}: its "mac" "${claim.mac}" ${mac}`);
  return problems;
}

/** The label selector of a network's claims. */
export const claimsOfNetwork = (network: string): string => `${LABEL_ADDRESS_CLAIM}=${networkKey(network)}`;
/** The label selector of a machine's claims (of any network). */
export const claimsOfMachine = (machine: string): string =>
  `${LABEL_ADDRESS_CLAIM},${LABEL_CLAIM_MACHINE}=${formatLabelValue(machine)}`;

/**
 * Whether a claim may be taken over: nobody adopted it, it is older than the grace, and
 * the VM of its machine does not exist (`vmExists` says, read by the caller).
 */
export function isAbandoned(claim: AddressClaim, now: number, vmExists: boolean): boolean {
  return !claim.owner && !vmExists && now - claim.created >= UNOWNED_CLAIM_GRACE_MS;
}

/** The first address of `candidates` (in order) that no claim holds. */
export function firstFree(candidates: readonly string[], held: ReadonlySet<string>, from = 0): number {
  for (let i = from; i < candidates.length; i++) if (!held.has(candidates[i] ?? '')) return i;
  return -1;
}

/** "10.0.0.10 (m1), 10.0.0.11 (m2), … and 7 more": who holds a pool's addresses. */
export function describeHolders(
  claims: readonly Pick<AddressClaim, 'address' | 'machine' | 'owner'>[],
  shown = 6,
): string {
  if (claims.length === 0) return 'no machine';
  const listed = claims
    .slice(0, shown)
    .map((c) => `${c.address} (${c.machine}${c.owner ? '' : ', not yet adopted by a VM'})`);
  const more = claims.length > shown ? ` and ${claims.length - shown} more` : '';
  return `${listed.join(', ')}${more}`;
}

/** The VM's recorded fixed address, or undefined when it has none (or a broken one). */
export function fixedAddressOfVm(annotations: Record<string, string> | undefined): FixedAddress | undefined {
  const raw = annotations?.[ANNOTATION_FIXED_ADDRESS];
  return raw ? parseFixedAddress(raw) : undefined;
}

/** A FixedAddress from its JSON (the annotation's or config.json's); undefined when it is not one. */
export function parseFixedAddress(raw: string): FixedAddress | undefined {
  try {
    const v = JSON.parse(raw) as Partial<FixedAddress>;
    if (typeof v.address !== 'string' || typeof v.mac !== 'string' || typeof v.interface !== 'string')
      return undefined;
    if (v.source !== 'pool' && v.source !== 'harvester-ippool') return undefined;
    return {
      address: v.address,
      prefix: typeof v.prefix === 'number' ? v.prefix : 0,
      interface: v.interface,
      mac: v.mac,
      network: typeof v.network === 'string' ? v.network : '',
      source: v.source,
      holder: typeof v.holder === 'string' ? v.holder : '',
      ...(typeof v.claimUid === 'string' && v.claimUid !== '' && v.claimUid.length <= 128
        ? { claimUid: v.claimUid }
        : {}),
    };
  } catch {
    return undefined;
  }
}

/** The annotation value: fixed key order, so the same address always gives the same text. */
export function fixedAddressAnnotation(f: FixedAddress): string {
  return JSON.stringify({
    address: f.address,
    prefix: f.prefix,
    interface: f.interface,
    mac: f.mac,
    network: f.network,
    source: f.source,
    holder: f.holder,
    ...(f.claimUid ? { claimUid: f.claimUid } : {}),
  });
}

/** A claim whose address no VM has: its VM is gone, its machine has none, or its VM has another address. */
export interface LeftoverClaim {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  address: string;
  network: string;
  machine: string;
  reason: string;
}

type VmLike = {
  metadata: { namespace?: string; name?: string; uid?: string; annotations?: Record<string, string> };
};

/**
 * The claims `leftovers` lists, those no VM's address matches: owned by a VM that no longer
 * exists (the garbage collector has not run, or cannot: a VM deleted with orphan
 * propagation); unowned, without a VM of their machine (a create that stopped half-way); or
 * naming (or owned by) a VM that exists but records another address, or, unowned, none (a
 * claim planted by anyone who may create ConfigMaps there, which holds its address for as
 * long as that VM lives: it is never taken over). Claims younger than `minAgeMs` are left
 * out. A claim a VM records (its address on its network) is never listed, nor one owned by a
 * VM that records no address (what it uses cannot be told).
 */
export function leftoverClaims(
  claims: readonly AddressClaim[],
  vms: readonly VmLike[],
  now: number,
  minAgeMs: number,
): LeftoverClaim[] {
  const vmByUid = new Map(vms.map((v) => [v.metadata.uid, v]));
  const vmByName = new Map(vms.map((v) => [keyTextOf(v), v]));
  const recorded = new Set(
    vms.flatMap((v) => {
      const f = fixedAddressOfVm(v.metadata.annotations);
      return f?.source === 'pool' ? [`${v.metadata.namespace ?? ''}|${f.network}|${f.address}`] : [];
    }),
  );
  const out: LeftoverClaim[] = [];
  for (const c of claims) {
    if (now - c.created < minAgeMs) continue;
    const base = {
      namespace: c.namespace,
      name: c.name,
      uid: c.uid,
      resourceVersion: c.resourceVersion,
      address: c.address,
      network: c.network,
      machine: c.machine,
    };
    const push = (reason: string): void => void out.push({ ...base, reason });
    const vm = c.owner ? vmByUid.get(c.owner.uid) : vmByName.get(keyText(c.namespace, c.machine));
    if (c.owner && !vm) push(`its VM ${keyText(c.namespace, c.owner.name)} is gone`);
    else if (!vm) push(`never adopted, and machine ${c.machine} has no VM`);
    else if (!recorded.has(`${c.namespace}|${c.network}|${c.address}`)) {
      const has = fixedAddressOfVm(vm.metadata.annotations);
      const vmName = keyText(c.namespace, vm.metadata.name);
      if (has) push(`no VM has this address: VM ${vmName} has ${has.address}`);
      else if (!c.owner)
        push(`no VM has this address: VM ${vmName} of machine ${c.machine} has no fixed address`);
    }
  }
  return out.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}
