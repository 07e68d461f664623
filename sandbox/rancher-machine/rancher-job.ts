// rancher-machine's command lines as Rancher's machine-provision Job passes them
// (docs/upstream/rancher.md#provisioning-jobs; rancher pkg/controllers/capr/machineprovision/args.go):
//   [--secret-namespace=<ns> --secret-name=<m>-machine-state] create --driver=harvester
//     --custom-install-script=<file> [--hostname-override=…] <--harvester-* flags, sorted>
//     --harvester-cluster-name=<cluster> <instance>
//   [--secret-namespace=… --secret-name=…] rm -y --update-config <instance>
// --driver-download-url and --driver-hash are left out: the job image's entrypoint consumes
// them (it downloads the driver) before it runs rancher-machine.
// Values as toArgs renders the HarvesterConfig: strings and numbers as --flag=value, an
// empty string or false left out, true as the bare flag.

export type HarvesterConfigValue = string | number | boolean;

export function harvesterFlags(config: Record<string, HarvesterConfigValue>): string[] {
  const args: string[] = [];
  for (const [key, value] of Object.entries(config)) {
    const flag = `--harvester-${key}`;
    if (value === '' || value === false) continue;
    args.push(value === true ? flag : `${flag}=${value}`);
  }
  return args.sort();
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
    ...harvesterFlags(opts.config),
    `--harvester-cluster-name=${opts.clusterName}`,
    opts.instance,
  ];
}

export function rancherRemoveArgs(opts: { instance: string; secretStore?: SecretStoreRef }): string[] {
  return [...secretArgs(opts.secretStore), 'rm', '-y', '--update-config', opts.instance];
}

/**
 * The create flags of a HarvesterMachine's driver fields beyond the pool's seeds (the
 * camelCase field as a kebab-case flag; `common` and `providerID` are not flags).
 */
export function machineSpecConfig(
  spec: Record<string, unknown> | undefined,
): Record<string, HarvesterConfigValue> {
  const config: Record<string, HarvesterConfigValue> = {};
  for (const [field, value] of Object.entries(spec ?? {})) {
    if (field === 'common' || field === 'providerID' || field === 'vmNamespace') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      config[field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)] = value;
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
