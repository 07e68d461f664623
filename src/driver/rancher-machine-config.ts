// Our flags as Rancher sees them: the HarvesterConfig field each becomes, and the driver
// arguments of rancher-machine's create job for a HarvesterConfig (Rancher keeps only the
// fields of the driver's schema, then renders them as flags). src/rancher/machine-config-fields.ts
// holds Rancher's rules; this applies them to FLAG_TABLE.
import {
  machineSpecFromConfig,
  rancherDriverArgs,
  rancherFieldName,
  rancherFieldType,
  type RancherFieldType,
} from '../rancher/machine-config-fields.js';
import { FLAG_TABLE, type FlagSpec } from './config/flags.js';

export interface RancherField {
  flag: FlagSpec;
  /** The HarvesterConfig field: ioThreadCount for --harvester-io-thread-count. */
  field: string;
  type: RancherFieldType;
}

export function rancherFields(): RancherField[] {
  return FLAG_TABLE.map((flag) => ({
    flag,
    field: rancherFieldName(flag.name) ?? flag.name,
    type: rancherFieldType(flag.kind),
  }));
}

/** The create job's --harvester-* arguments for a HarvesterConfig (metadata and unknown fields dropped, as Rancher drops them). */
export function createArgsForHarvesterConfig(
  config: Readonly<Record<string, unknown>>,
  clusterName: string,
): string[] {
  const schema = new Set(rancherFields().map((f) => f.field));
  return rancherDriverArgs('harvester', machineSpecFromConfig(config, schema), clusterName);
}
