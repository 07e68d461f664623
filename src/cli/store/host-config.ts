// A machine's config.json as rancher-machine's libmachine writes it (host.Host):
// {ConfigVersion, Driver, DriverName, HostOptions, Name}, so a store directory can be
// handed to rancher-machine (or Rancher's machine-state Secret) as it is. The Driver
// object is the driver's own GetConfigRaw JSON; nothing here interprets it.
import { DRIVER_NAME } from '../../driver/harvester-driver.js';
import { UsageError } from '../errors.js';

/** libmachine's current host config version. */
export const CONFIG_VERSION = 3;

/**
 * libmachine's host.Options. Engine, Swarm and Auth options are nil: this CLI does not
 * provision Docker on the machine (Rancher's install script runs from cloud-init).
 */
export interface HostOptions {
  Driver: string;
  Memory: number;
  Disk: number;
  CustomInstallScript: string;
  EngineOptions: null;
  SwarmOptions: null;
  AuthOptions: null;
}

export interface HostConfig {
  ConfigVersion: number;
  Driver: Record<string, unknown>;
  DriverName: string;
  HostOptions: HostOptions;
  Name: string;
}

/** Lower-case DNS names: what a VirtualMachine may be called, and safe as a directory name. */
const MACHINE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

export function isMachineName(name: string): boolean {
  return name.length <= 253 && MACHINE_NAME.test(name);
}

export function checkMachineName(name: string): void {
  if (!isMachineName(name)) {
    throw new UsageError(
      `invalid machine name "${name.slice(0, 80)}": use lower-case letters, digits, "-" and "." ` +
        '(starting and ending with a letter or digit, at most 253 characters), as Harvester names VMs',
    );
  }
}

export function hostConfigFor(name: string, driverRaw: Uint8Array | string): HostConfig {
  const text = typeof driverRaw === 'string' ? driverRaw : Buffer.from(driverRaw).toString('utf8');
  return {
    ConfigVersion: CONFIG_VERSION,
    Driver: JSON.parse(text) as Record<string, unknown>,
    DriverName: DRIVER_NAME,
    HostOptions: {
      Driver: DRIVER_NAME,
      Memory: 0,
      Disk: 0,
      CustomInstallScript: '',
      EngineOptions: null,
      SwarmOptions: null,
      AuthOptions: null,
    },
    Name: name,
  };
}

/** config.json text: indented as libmachine's filestore writes it. */
export function serializeHostConfig(host: HostConfig): string {
  return JSON.stringify(host, null, 4) + '\n';
}

/** Reads config.json; throws with the file named (never its content) when it is not ours. */
export function parseHostConfig(text: string, file: string): HostConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not valid JSON`);
  }
  const host = parsed as Partial<HostConfig> | null;
  if (!host || typeof host !== 'object' || typeof host.Driver !== 'object' || host.Driver === null) {
    throw new Error(`${file} is not a machine config (no Driver object)`);
  }
  if (host.DriverName !== DRIVER_NAME) {
    throw new Error(
      `${file} belongs to driver "${String(host.DriverName)}", not "${DRIVER_NAME}": this CLI only drives Harvester machines`,
    );
  }
  return host as HostConfig;
}

/** The Driver object as SetConfigRaw takes it. */
export function driverConfigRaw(host: HostConfig): Uint8Array {
  return Buffer.from(JSON.stringify(host.Driver), 'utf8');
}
