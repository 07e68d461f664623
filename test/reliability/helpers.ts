// What the reliability tests share: drivers with a progress callback and client hooks (the
// seams that let a fault land at a chosen step), settling a promise into its error, and
// reading what exists on Harvester to prove that nothing was duplicated or lost.
import { HarvesterDriver } from '../../src/driver/harvester-driver.js';
import type { ProgressEvent } from '../../src/driver/operations/context.js';
import type { KubeClient, KubeClientOptions } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { captureLog, machineFlags, type CapturedLog, type MachineSpec } from '../support/machines.js';
import { recordError } from '../../sandbox/secret-ledger.js';

export interface WatchedMachine {
  driver: HarvesterDriver;
  log: CapturedLog;
  progress: ProgressEvent[];
  /** Resolves with the first progress event (past or future) that matches. */
  progressWhere(match: (e: ProgressEvent) => boolean): Promise<ProgressEvent>;
}

/** newMachine (test/support/machines.ts) with a progress record and client options. */
export function watchedMachine(
  spec: MachineSpec & { clientOptions?: KubeClientOptions; savedConfig?: Uint8Array },
): WatchedMachine {
  const { log, logger } = captureLog();
  const progress: ProgressEvent[] = [];
  const waiters: Array<{ match: (e: ProgressEvent) => boolean; resolve: (e: ProgressEvent) => void }> = [];
  const driver = new HarvesterDriver({
    logger,
    argv: spec.argv ?? [],
    env: spec.env ?? {},
    ...(spec.clientOptions ? { clientOptions: spec.clientOptions } : {}),
    progress: (event) => {
      progress.push(event);
      for (const w of waiters.splice(0)) {
        if (w.match(event)) w.resolve(event);
        else waiters.push(w);
      }
    },
  });
  if (spec.savedConfig) {
    driver.setConfigRaw(spec.savedConfig);
  } else {
    driver.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: spec.name, StorePath: spec.storePath })));
    driver.setConfigFromFlags(machineFlags(spec));
  }
  return {
    driver,
    log,
    progress,
    progressWhere: (match) => {
      const seen = progress.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

/** The error a promise rejects with (recorded for the secrets scan), or undefined. */
export async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    recordError('reliability test', err);
    return err;
  }
}

import { eventually, sleep } from '../support/eventually.js';

export { eventually, sleep };

/** The VMs labelled as this machine's (the Go driver's harvesterhci.io/vmName label). */
export async function vmsOfMachine(
  admin: KubeClient,
  namespace: string,
  name: string,
): Promise<KubeObject[]> {
  const list = await admin.list<KubeObject>(Resources.virtualMachine, {
    namespace,
    labelSelector: `harvesterhci.io/vmName=${name}`,
  });
  return list.items;
}

/** PVC name → uid of the namespace's PVCs that are not being deleted. */
export async function livePvcUids(admin: KubeClient, namespace: string): Promise<Map<string, string>> {
  const list = await admin.list<KubeObject>(Resources.pvc, { namespace });
  return new Map(
    list.items
      .filter((p) => !p.metadata.deletionTimestamp)
      .map((p) => [p.metadata.name, p.metadata.uid ?? '']),
  );
}

export { untilRejected } from '../support/credentials.js';

/**
 * Client options whose retry pause first runs `during` (the next `times` pauses): a transient
 * fault injected at the proxy makes the driver pause between two of its steps, and `during`
 * lands exactly there (another writer, an expiring credential).
 */
export function pauseHook(): {
  options: Pick<KubeClientOptions, 'sleep'>;
  arm(during: () => Promise<void>, times?: number): void;
  /** How many pauses ran `during`. */
  fired(): number;
} {
  let pending: (() => Promise<void>) | undefined;
  let left = 0;
  let fired = 0;
  return {
    options: {
      sleep: async (ms) => {
        const run = left > 0 ? pending : undefined;
        if (run) {
          left--;
          fired++;
          await run();
        }
        await sleep(ms);
      },
    },
    arm: (during, times = 1) => {
      pending = during;
      left = times;
    },
    fired: () => fired,
  };
}
