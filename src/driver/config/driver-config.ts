// The driver's saved config: the Go driver's fields, and our options under one extra key.
import { newGoDriverConfig, type GoDriverConfig } from '../../harvester/go-config.js';
import { GO_WAIT_SECONDS } from '../flags.js';

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

/** The Go driver's NewDriver(hostName, storePath), with our options at their defaults. */
export function newDriverConfig(machineName = '', storePath = ''): DriverConfig {
  return { ...newGoDriverConfig(machineName, storePath), HarvesterMachine: defaultHarvesterMachineOptions() };
}
