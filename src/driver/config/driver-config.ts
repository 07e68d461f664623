// The driver's saved config: the Go driver's fields, and our options under one extra key.
import type { FixedAddress } from '../../harvester/fixed-addresses/address-claims.js';
import { newGoDriverConfig, type GoDriverConfig } from '../../harvester/config/go-config.js';
import type { IpPoolInfo } from '../../harvester/fixed-addresses/ip-pool.js';
import { GO_WAIT_SECONDS } from './flags.js';

/** Our settings that the Go driver has no field for; saved under one extra key, "HarvesterMachine". */
export interface HarvesterMachineOptions {
  CreateTimeoutSeconds: number;
  IPTimeoutSeconds: number;
  RemoveTimeoutSeconds: number;
  /** --harvester-ip-network; "" = the first interface with an address. */
  IPNetwork: string;
  CloudInitInSecret: boolean;
  /** --harvester-ip-pool-info; null = no fixed address. */
  IPPoolInfo: IpPoolInfo | null;
  /** --harvester-vm-labels. */
  VMLabels: Record<string, string>;
  /** --harvester-vm-annotations. */
  VMAnnotations: Record<string, string>;
  /** The fixed address Create took from the pool, and who holds it; null until then. */
  FixedAddress: FixedAddress | null;
}

export type DriverConfig = GoDriverConfig & { HarvesterMachine: HarvesterMachineOptions };

export function defaultHarvesterMachineOptions(): HarvesterMachineOptions {
  return {
    CreateTimeoutSeconds: GO_WAIT_SECONDS,
    IPTimeoutSeconds: GO_WAIT_SECONDS,
    RemoveTimeoutSeconds: GO_WAIT_SECONDS,
    IPNetwork: '',
    CloudInitInSecret: false,
    IPPoolInfo: null,
    VMLabels: {},
    VMAnnotations: {},
    FixedAddress: null,
  };
}

/** The Go driver's NewDriver(hostName, storePath), with our options at their defaults. */
export function newDriverConfig(machineName = '', storePath = ''): DriverConfig {
  return { ...newGoDriverConfig(machineName, storePath), HarvesterMachine: defaultHarvesterMachineOptions() };
}
