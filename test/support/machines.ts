// Drivers for test machines, configured the way rancher-machine does it: a new driver
// with MachineName and StorePath (NewHost), then SetConfigFromFlags with every flag's
// default overridden by the flags Rancher passes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { defaultFlagValues } from '../../src/driver/config/flags.js';
import { HarvesterDriver } from '../../src/driver/harvester-driver.js';
import type { FlagValue } from '../../src/driver/machine-driver.js';
import { createLogger, type LogLevel } from '../../src/log/logger.js';
import { recordOutput } from '../../sandbox/secret-ledger.js';

export interface CapturedLog {
  lines: Array<{ level: LogLevel; line: string }>;
  text(): string;
}

export function captureLog(): { log: CapturedLog; logger: ReturnType<typeof createLogger> } {
  const lines: CapturedLog['lines'] = [];
  const logger = createLogger({
    level: 'debug',
    sink: {
      write: (level, line) => {
        lines.push({ level, line });
        recordOutput('driver log', line); // for the secrets scan after the suite
      },
    },
  });
  return { log: { lines, text: () => lines.map((l) => l.line).join('\n') }, logger };
}

/** A store directory for one test file, removed after it. */
export function tempStore(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-store-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface MachineSpec {
  name: string;
  kubeconfig: string;
  storePath: string;
  clusterName?: string;
  namespace?: string;
  flags?: Record<string, FlagValue>;
  env?: Record<string, string | undefined>;
  argv?: string[];
  /** How often a wait without news logs a "Still waiting" line (the driver's default: 15 s). */
  progressIntervalMs?: number;
  /** Called once per HTTP request the driver sends (method, path with its query). */
  onRequest?: (method: string, path: string) => void;
}

export function machineFlags(spec: MachineSpec): Map<string, FlagValue> {
  const values = defaultFlagValues();
  values.set('harvester-kubeconfig-content', spec.kubeconfig);
  values.set('harvester-vm-namespace', spec.namespace ?? 'default');
  values.set('harvester-image-name', 'default/image-ubuntu');
  values.set('harvester-network-name', 'default/vlan1');
  values.set('harvester-disk-size', 40);
  values.set('harvester-cluster-name', spec.clusterName ?? '');
  values.set('harvester-create-timeout', 60);
  values.set('harvester-ip-timeout', 60);
  values.set('harvester-remove-timeout', 60);
  for (const [k, v] of Object.entries(spec.flags ?? {})) values.set(k, v);
  return values;
}

/** A driver as rancher-machine's create prepares it (SetConfigRaw of NewHost, then flags). */
export function newMachine(spec: MachineSpec): { driver: HarvesterDriver; log: CapturedLog } {
  const { log, logger } = captureLog();
  const driver = new HarvesterDriver({
    logger,
    argv: spec.argv ?? [],
    env: spec.env ?? {},
    ...(spec.progressIntervalMs !== undefined ? { progressIntervalMs: spec.progressIntervalMs } : {}),
    ...(spec.onRequest ? { clientOptions: { onRequest: spec.onRequest } } : {}),
  });
  driver.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: spec.name, StorePath: spec.storePath })));
  driver.setConfigFromFlags(machineFlags(spec));
  return { driver, log };
}

/** A driver that loads a saved config (as rancher-machine's rm does). */
export function loadMachine(
  savedConfig: Uint8Array,
  opts: { env?: Record<string, string | undefined>; argv?: string[] } = {},
): { driver: HarvesterDriver; log: CapturedLog } {
  const { log, logger } = captureLog();
  const driver = new HarvesterDriver({ logger, argv: opts.argv ?? [], env: opts.env ?? {} });
  driver.setConfigRaw(savedConfig);
  return { driver, log };
}
