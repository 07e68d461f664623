// rancher-machine's command lines as Rancher's machine-provision Job passes them
// (docs/upstream/rancher.md#provisioning-jobs; rancher pkg/controllers/capr/machineprovision/args.go):
//   [--secret-namespace=<ns> --secret-name=<m>-machine-state] create --driver=harvester
//     --custom-install-script=<file> [--hostname-override=…] <--harvester-* flags with
//     --harvester-cluster-name=<cluster>, sorted> <instance>
//   [--secret-namespace=… --secret-name=…] rm -y --update-config <instance>
// --driver-download-url and --driver-hash are left out: the job image's entrypoint consumes
// them (it downloads the driver) before it runs rancher-machine.
// The field-to-flag rule and the rendering of values are Rancher's, in one place:
// src/rancher/machine-config-fields.ts.
import {
  rancherDriverArgs,
  rancherFieldName,
  rancherFlagForField,
} from '../../src/rancher/machine-config-fields.js';

export type HarvesterConfigValue = string | number | boolean;

/** A config keyed by flag name without `--harvester-` (`cpu-count`) as the machine's spec fields (`cpuCount`). */
function specOfFlags(config: Record<string, HarvesterConfigValue>): Record<string, HarvesterConfigValue> {
  return Object.fromEntries(
    Object.entries(config).map(([flag, value]) => [rancherFieldName(`harvester-${flag}`) ?? flag, value]),
  );
}

export interface SecretStoreRef {
  namespace: string;
  name: string;
}

function secretArgs(store: SecretStoreRef | undefined): string[] {
  return store ? [`--secret-namespace=${store.namespace}`, `--secret-name=${store.name}`] : [];
}

export function rancherCreateArgs(opts: {
  instance: string;
  clusterName: string;
  installScript: string;
  config: Record<string, HarvesterConfigValue>;
  secretStore?: SecretStoreRef;
}): string[] {
  return [
    ...secretArgs(opts.secretStore),
    'create',
    '--driver=harvester',
    `--custom-install-script=${opts.installScript}`,
    ...rancherDriverArgs('harvester', specOfFlags(opts.config), opts.clusterName),
    opts.instance,
  ];
}

export function rancherRemoveArgs(opts: { instance: string; secretStore?: SecretStoreRef }): string[] {
  return [...secretArgs(opts.secretStore), 'rm', '-y', '--update-config', opts.instance];
}

/**
 * The create flags of a HarvesterMachine's driver fields beyond the pool's seeds (each field
 * as Rancher names its flag, without `--harvester-`; `common` and `providerID` are not flags).
 */
export function machineSpecConfig(
  spec: Record<string, unknown> | undefined,
): Record<string, HarvesterConfigValue> {
  const config: Record<string, HarvesterConfigValue> = {};
  for (const [field, value] of Object.entries(spec ?? {})) {
    if (field === 'common' || field === 'providerID' || field === 'vmNamespace') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      config[rancherFlagForField('harvester', field).slice('--harvester-'.length)] = value;
  }
  return config;
}

/** A machine pool's HarvesterConfig as the Rancher UI fills it for the sandbox's seeds. */
export function poolConfig(seeds: {
  namespace: string;
  image: string;
  network: string;
}): Record<string, HarvesterConfigValue> {
  return {
    'cpu-count': 2,
    'disk-bus': 'virtio',
    'disk-size': 40,
    'image-name': seeds.image,
    'memory-size': 4,
    'network-model': 'virtio',
    'network-name': seeds.network,
    'ssh-user': 'ubuntu',
    'user-data': '#cloud-config\npackage_update: true\npackages:\n  - qemu-guest-agent\n',
    'vm-namespace': seeds.namespace,
  };
}

/** What Rancher mounts at /run/secrets/machine/value: the system-agent install script. */
export const INSTALL_SCRIPT =
  '#!/usr/bin/env sh\n# rancher-system-agent install script (sandbox stand-in)\necho "installing rancher-system-agent"\n';
