// The machines controller: the gate (a pre-terminate hook on each Harvester-backed Machine)
// and, when a Machine goes, the cleanup of its VM before the gate is released
// (machine-reconciler.ts). One key per CAPI Machine, woken by its Cluster, its
// HarvesterMachine, and by a renewed credential while gates are held.
import { keyOf, objectKey, type ObjectKey } from '../../api/object-key.js';
import type { Manager } from '../../kube/index.js';
import { LABEL_RKE_CAPI_MACHINE } from '../../rancher/labels.js';
import { BY_CLUSTER, BY_INFRASTRUCTURE, clusterIndexKey, type RancherCaches } from '../common/caches.js';
import { queueLogger, wakeUps, type Shared } from '../common/setup-context.js';
import type { HarvesterMachine } from '../common/types.js';
import { MachineReconciler } from './machine-reconciler.js';

export interface GateOptions {
  /** Machines reconciled at once (each waits on Harvester). */
  concurrency?: number;
  /** The last inventory of a cluster's volumes, before its first VM is annotated. */
  lastInventory: (cluster: ObjectKey, timeoutMs: number) => Promise<unknown>;
}

export function setup(
  manager: Manager,
  shared: Shared,
  options: GateOptions,
): { reconciler: MachineReconciler } {
  const { caches, config } = shared;
  const { onChange, onCredentialRejected } = wakeUps(shared);
  const reconciler = new MachineReconciler({
    client: shared.client,
    caches,
    harvester: shared.harvester,
    events: shared.events,
    logger: shared.logger,
    metrics: shared.metrics,
    hookName: config.hookName,
    gateDeadlineMs: config.gateDeadlineMs,
    onCredentialRejected,
    onChange,
    lastInventory: async (cluster, timeoutMs) => {
      await options.lastInventory(cluster, timeoutMs);
      onChange();
    },
  });
  manager
    .controller('machines', {
      ...queueLogger(shared, 'machines'),
      concurrency: options.concurrency ?? 8,
      reconcile: (key) => reconciler.reconcile(key),
    })
    .watch(caches.machines)
    .watch(caches.capiClusters, (e) => machinesOf(caches, keyOf(e.object)))
    .watch(caches.provisioningClusters, (e) => machinesOf(caches, keyOf(e.object)))
    .watch(caches.harvesterMachines, (e) => machinesOfHarvesterMachine(caches, e.object))
    // A renewed credential: retry every held gate now rather than at its next backoff.
    .watch(caches.credentials, () => [...reconciler.held.keys()]);
  return { reconciler };
}

/** A HarvesterMachine's CAPI Machine: by label, by owner, else whichever Machine points at it. */
function machinesOfHarvesterMachine(caches: RancherCaches, hm: HarvesterMachine): ObjectKey[] {
  const ns = hm.metadata.namespace ?? '';
  const owner = hm.metadata.ownerReferences?.find((o) => o.kind === 'Machine')?.name;
  const machine = hm.metadata.labels?.[LABEL_RKE_CAPI_MACHINE] ?? owner;
  if (machine) return [objectKey(ns, machine)];
  return caches.machines.byIndex(BY_INFRASTRUCTURE, clusterIndexKey(ns, hm.metadata.name)).map(keyOf);
}

function machinesOf(caches: RancherCaches, cluster: ObjectKey): ObjectKey[] {
  return caches.machines.byIndex(BY_CLUSTER, clusterIndexKey(cluster.namespace, cluster.name)).map(keyOf);
}
