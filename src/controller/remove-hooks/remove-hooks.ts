// `harvester-machine controller remove-hooks`: removes this installation's pre-terminate hook
// from every Machine, so that uninstalling the controller never strands a deletion (Cluster
// API waits for as long as a hook annotation stays). The chart's pre-delete Job runs it.
// First it takes the controller's Lease (lease-hold.ts) so that no replica adds a hook back,
// waits until the replica it took the Lease from has stopped acting, then removes the hooks
// until a pass finds none left.
import { keyOf, keyText, keyTextOf } from '../../api/object-key.js';
import { isConflict, isNotFound, type KubeClient } from '../../kube/index.js';
import { Resources } from '../../kube/resources.js';
import type { Logger } from '../../log/logger.js';
import { hookAnnotation, Reasons } from '../constants.js';
import type { EventRecorder } from '../common/events.js';
import { holdLease } from './lease-hold.js';
import type { CapiMachine } from '../common/types.js';

export interface RemoveHooksOptions {
  client: KubeClient;
  logger: Logger;
  events: EventRecorder;
  /** Namespaces of the Machines; [] = all namespaces. */
  namespaces: string[];
  hookName: string;
  lease: { namespace: string; name: string; identity: string; holdMs: number };
  sleep?: (ms: number) => Promise<void>;
}

export interface RemoveHooksResult {
  /** namespace/name of every Machine a hook was removed from. */
  removed: string[];
  /** Those of them that were being deleted: released without the controller's cleanup. */
  releasedWhileDeleting: string[];
}

/** Lease holder identities of this command: `remove-hooks/<pod or host>`. */
export const HOLDER_PREFIX = 'remove-hooks/';

/**
 * Whether the Lease was taken from a replica that may still act. Not when it was held by an
 * earlier run of this command (a retried Job): that one adds no hooks.
 */
export function mustWaitForPreviousHolder(previousHolder: string): boolean {
  return previousHolder !== '' && !previousHolder.startsWith(HOLDER_PREFIX);
}

/** The Machines still carrying the hook (pure). */
export function machinesWithHook(machines: CapiMachine[], hookName: string): CapiMachine[] {
  const key = hookAnnotation(hookName);
  return machines.filter((m) => m.metadata.annotations?.[key] !== undefined);
}

const PASSES = 3;
/** Margin over the old leader's lease duration: its last in-flight request may still land. */
const SETTLE_MS = 2_000;

export async function removeHooks(opts: RemoveHooksOptions): Promise<RemoveHooksResult> {
  const { client, logger } = opts;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const hold = await holdLease(client, opts.lease);
  if (mustWaitForPreviousHolder(hold.previousHolder)) {
    const waitMs = hold.previousHolderMayActMs + SETTLE_MS;
    logger.info('took the Lease from the leader; waiting until it has stopped', {
      lease: keyText(opts.lease.namespace, opts.lease.name),
      previousHolder: hold.previousHolder,
      waitMs,
    });
    await sleep(waitMs);
  }
  const key = hookAnnotation(opts.hookName);
  const result: RemoveHooksResult = { removed: [], releasedWhileDeleting: [] };
  const scopes = opts.namespaces.length > 0 ? opts.namespaces : [undefined];
  for (let pass = 1; pass <= PASSES; pass++) {
    let removedThisPass = 0;
    for (const namespace of scopes) {
      const list = await client.list<CapiMachine>(
        Resources.capiMachine,
        namespace !== undefined ? { namespace } : {},
      );
      for (const machine of machinesWithHook(list.items, opts.hookName)) {
        if (await removeOne(client, machine, key)) {
          removedThisPass++;
          record(opts, result, machine, key);
        }
      }
    }
    if (removedThisPass === 0) break;
    if (pass === PASSES)
      throw new Error(`hooks ${key} were added back during ${PASSES} passes: is another controller running?`);
  }
  await opts.events.drain();
  return result;
}

/** Removes the annotation at the resourceVersion it was seen at; re-reads on Conflict. */
async function removeOne(client: KubeClient, seen: CapiMachine, key: string): Promise<boolean> {
  const at = keyOf(seen);
  let machine: CapiMachine | undefined = seen;
  for (let attempt = 1; machine?.metadata.annotations?.[key] !== undefined; attempt++) {
    try {
      await client.patch(Resources.capiMachine, at, {
        metadata: { resourceVersion: machine.metadata.resourceVersion, annotations: { [key]: null } },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= 5) throw err;
      machine = await client.find<CapiMachine>(Resources.capiMachine, at);
    }
  }
  return false;
}

function record(
  opts: RemoveHooksOptions,
  result: RemoveHooksResult,
  machine: CapiMachine,
  key: string,
): void {
  const name = keyTextOf(machine);
  result.removed.push(name);
  const deleting = Boolean(machine.metadata.deletionTimestamp);
  if (deleting) result.releasedWhileDeleting.push(name);
  opts.events.record(
    Resources.capiMachine,
    machine,
    deleting ? 'Warning' : 'Normal',
    Reasons.hookRemoved,
    deleting
      ? `removed pre-terminate hook ${key} (controller remove-hooks) while the Machine is being deleted: its VM may not have been annotated, so a whole-cluster deletion may leave its volumes on Harvester`
      : `removed pre-terminate hook ${key} (controller remove-hooks: the controller is being uninstalled)`,
  );
}
