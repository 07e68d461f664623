// The local machine store: <root>/machines/<name>/{config.json,id_rsa,id_rsa.pub}, the
// layout rancher-machine uses (the driver puts the SSH key at <StorePath>/machines/<name>).
// Everything in it can hold a credential, so directories are 0700 and files 0600, and
// config.json is replaced atomically (temp file + rename): a crash never leaves half a file.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MachineNotFoundError, UsageError } from '../errors.js';
import {
  checkMachineName,
  isMachineName,
  hostConfigFor,
  parseHostConfig,
  serializeHostConfig,
  type HostConfig,
} from './host-config.js';

export const STORE_ENV = 'HARVESTER_MACHINE_STORE';
const CONFIG_FILE = 'config.json';

/** --store, else $HARVESTER_MACHINE_STORE, else $XDG_DATA_HOME/harvester-machine, else ~/.local/share/harvester-machine. */
export function storeRoot(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  home: string = os.homedir(),
): string {
  if (flag) return path.resolve(flag);
  if (env[STORE_ENV]) return path.resolve(env[STORE_ENV]);
  // XDG: a relative XDG_DATA_HOME is invalid and must be ignored.
  const xdg = env['XDG_DATA_HOME'];
  const dataHome = xdg && path.isAbsolute(xdg) ? xdg : path.join(home, '.local', 'share');
  return path.join(dataHome, 'harvester-machine');
}

async function mkdirPrivate(dir: string): Promise<void> {
  const created = await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  // Only what we created (or own for sure) is tightened: --store may point at an existing directory.
  if (created !== undefined) await fs.chmod(dir, 0o700);
}

export interface StoredMachine {
  name: string;
  dir: string;
  host: HostConfig;
}

export class MachineStore {
  constructor(readonly root: string) {}

  get machinesDir(): string {
    return path.join(this.root, 'machines');
  }

  machineDir(name: string): string {
    checkMachineName(name);
    return path.join(this.machinesDir, name);
  }

  /** Names of the stored machines (directories holding a config.json), sorted. */
  async list(): Promise<string[]> {
    const entries = await fs
      .readdir(this.machinesDir, { withFileTypes: true })
      .catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return [];
        throw err;
      });
    const names: string[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || !isMachineName(entry.name)) continue;
      const exists = await fs.access(path.join(this.machinesDir, entry.name, CONFIG_FILE)).then(
        () => true,
        () => false,
      );
      if (exists) names.push(entry.name);
    }
    return names.sort();
  }

  /** Makes the machine's directory; a machine of that name already in the store is an error. */
  async create(name: string): Promise<string> {
    const dir = this.machineDir(name);
    await mkdirPrivate(this.root);
    await mkdirPrivate(this.machinesDir);
    await fs.chmod(this.machinesDir, 0o700);
    try {
      await fs.mkdir(dir, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new UsageError(
          `machine "${name}" already exists in the store ${this.root}: choose another name, or remove it first (harvester-machine rm ${name})`,
        );
      }
      throw err;
    }
    await fs.chmod(dir, 0o700);
    return dir;
  }

  async load(name: string): Promise<StoredMachine> {
    const dir = this.machineDir(name);
    const file = path.join(dir, CONFIG_FILE);
    const text = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') {
        throw new MachineNotFoundError(
          `machine "${name}" not found in the store ${this.root} (harvester-machine ls lists the machines)`,
        );
      }
      throw err;
    });
    return { name, dir, host: parseHostConfig(text, file) };
  }

  /** Writes config.json atomically with the driver's current config. */
  async save(name: string, driverRaw: Uint8Array): Promise<void> {
    const dir = this.machineDir(name);
    const target = path.join(dir, CONFIG_FILE);
    const temp = path.join(
      dir,
      `.${CONFIG_FILE}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`,
    );
    const handle = await fs.open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(serializeHostConfig(hostConfigFor(name, driverRaw)), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await fs.rename(temp, target);
    } catch (err) {
      await fs.rm(temp, { force: true });
      throw err;
    }
    await this.secure(name);
  }

  /** 0600 on every file of the machine (the driver writes the public key 0644), 0700 on the directory. */
  async secure(name: string): Promise<void> {
    const dir = this.machineDir(name);
    await fs.chmod(dir, 0o700);
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      if (entry.isFile()) await fs.chmod(path.join(dir, entry.name), 0o600);
    }
  }

  async remove(name: string): Promise<void> {
    await fs.rm(this.machineDir(name), { recursive: true, force: true });
  }
}
