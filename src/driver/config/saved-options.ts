// Our options in config.json ("HarvesterMachine"): their fixed key order when written, and
// how the structured ones (the pool, labels, annotations, the address taken) are read back.
// A saved config.json can hold anything, so each is checked for its shape; the flag checks
// then run on what was read (configProblems) before anything is created from it.
import {
  fixedAddressAnnotation,
  parseFixedAddress,
  type FixedAddress,
} from '../../harvester/fixed-addresses/address-claims.js';
import { parseIpPoolInfo, type IpPoolInfo } from '../../harvester/fixed-addresses/ip-pool.js';
import type { HarvesterMachineOptions } from './index.js';

export type StructuredOption = 'IPPoolInfo' | 'VMLabels' | 'VMAnnotations' | 'FixedAddress';

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function stringMap(v: unknown): { value: Record<string, string> } | undefined {
  if (v === null) return { value: {} };
  if (!isObject(v) || Object.values(v).some((e) => typeof e !== 'string')) return undefined;
  return { value: { ...(v as Record<string, string>) } };
}

function ipPoolInfo(v: unknown): { value: IpPoolInfo | null } | undefined {
  if (v === null) return { value: null };
  if (!isObject(v)) return undefined;
  const parsed = parseIpPoolInfo(JSON.stringify(v));
  return parsed.value ? { value: parsed.value } : undefined;
}

function fixedAddress(v: unknown): { value: FixedAddress | null } | undefined {
  if (v === null) return { value: null };
  if (!isObject(v)) return undefined;
  const read = parseFixedAddress(JSON.stringify(v));
  return read ? { value: read } : undefined;
}

/** Readers of the options that are not plain strings, numbers or booleans. */
export const STRUCTURED_OPTIONS: Record<StructuredOption, (v: unknown) => { value: unknown } | undefined> = {
  IPPoolInfo: ipPoolInfo,
  VMLabels: stringMap,
  VMAnnotations: stringMap,
  FixedAddress: fixedAddress,
};

const sortedMap = (m: Record<string, string>): Record<string, string> =>
  Object.fromEntries(
    Object.keys(m)
      .sort()
      .map((k) => [k, m[k] ?? '']),
  );

/**
 * The object written under HarvesterMachine, keys always in this order. The options of
 * later releases are left out while unset, so a machine without them saves what it did.
 */
export function renderOptions(o: HarvesterMachineOptions): Record<string, unknown> {
  const pool = o.IPPoolInfo;
  return {
    CreateTimeoutSeconds: o.CreateTimeoutSeconds,
    IPTimeoutSeconds: o.IPTimeoutSeconds,
    RemoveTimeoutSeconds: o.RemoveTimeoutSeconds,
    IPNetwork: o.IPNetwork,
    CloudInitInSecret: o.CloudInitInSecret,
    ...(pool
      ? {
          IPPoolInfo: {
            network: pool.network,
            interface: pool.interface,
            range: pool.range,
            cidr: pool.cidr,
            exclude: pool.exclude,
            prefix: pool.prefix,
            gateway: pool.gateway,
            dns: pool.dns,
          },
        }
      : {}),
    ...(Object.keys(o.VMLabels).length > 0 ? { VMLabels: sortedMap(o.VMLabels) } : {}),
    ...(Object.keys(o.VMAnnotations).length > 0 ? { VMAnnotations: sortedMap(o.VMAnnotations) } : {}),
    ...(o.FixedAddress
      ? { FixedAddress: JSON.parse(fixedAddressAnnotation(o.FixedAddress)) as unknown }
      : {}),
  };
}
