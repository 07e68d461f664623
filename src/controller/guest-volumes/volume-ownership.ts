import { KeyMap, formatKey, keyText, type ObjectKey } from '../../api/object-key.js';
import {
  decideOwnership,
  type GuestVolume,
  type OwnershipOutcome,
  type GuestVolumeList,
  type RecordPath,
  harvesterVolumes,
} from '../../harvester/guest-volumes.js';
import { LABEL_GUEST_CLUSTER_NAME } from '../../harvester/labels.js';
import type { PersistentVolumeClaim } from '../../harvester/types.js';
import { isConflict, type KubeClient, type ReconcileResult } from '../../kube/index.js';
import { Resources, type ResourceType, type KubeObject } from '../../kube/resources.js';
import type { Logger } from '../../log/logger.js';
import { redact } from '../../log/redact.js';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { RancherCaches } from '../common/caches.js';
import {
  learnTargets,
  withTargetClient,
  type ClusterTarget,
  type TargetFailure,
} from '../common/cluster-targets.js';
import type { EventRecorder } from '../common/events.js';
import type { GuestVolumesMode } from '../process/config.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { HarvesterApi } from '../../harvester-access/harvester-api.js';
import { listGuestVolumes, type GuestWatches, type GuestWatchState } from './guest-watches.js';
import { replaceAll } from '../common/metrics.js';

export const OwnershipReasons = {
  recorded: 'GuestVolumesRecorded',
  otherCluster: 'GuestVolumeOwnedByOtherCluster',
  notCorroborated: 'GuestVolumeNotCorroborated',
  failed: 'GuestVolumeRecordFailed',
  unreachable: 'GuestClusterUnreachable',
  watching: 'GuestClusterWatched',
  inventoried: 'GuestVolumesInventoried',
  overBudget: 'GuestClusterOverBudget',
} as const;

export function ownershipMetrics(registry: Registry) {
  return {
    watches: new Gauge({
      name: 'harvester_machine_guest_watches',
      help: "Guest clusters whose PersistentVolumes are watched, by the watch's state (watching, connecting, waiting, unreachable, no-kubeconfig, unusable).",
      labelNames: ['state'] as const,
      registers: [registry],
    }),
    guestRequests: new Counter({
      name: 'harvester_machine_guest_requests_total',
      help: "Requests sent to guest clusters' apiservers (lists and watches of their PersistentVolumes).",
      registers: [registry],
    }),
    harvesterRequests: new Counter({
      name: 'harvester_machine_ownership_harvester_requests_total',
      help: 'Requests sent to Harvester to record which guest cluster a host volume belongs to.',
      registers: [registry],
    }),
    labelled: new Counter({
      name: 'harvester_machine_guest_volumes_labelled_total',
      help: 'Host volumes labelled with their guest cluster, by how the guest volume was found (watch, last inventory).',
      labelNames: ['path'] as const,
      registers: [registry],
    }),
    conflicts: new Counter({
      name: 'harvester_machine_guest_volume_conflicts_total',
      help: 'Host volumes more than one guest cluster named (contested: never deleted automatically).',
      registers: [registry],
    }),
    uncorroborated: new Counter({
      name: 'harvester_machine_guest_volumes_uncorroborated_total',
      help: 'Host volumes a guest cluster named whose ownership Harvester does not corroborate (never deleted automatically).',
      registers: [registry],
    }),
    malformed: new Counter({
      name: 'harvester_machine_guest_malformed_volumes_total',
      help: "Entries of a guest's PersistentVolume list that are no PersistentVolume (dropped), at inventories.",
      registers: [registry],
    }),
    overBudget: new Gauge({
      name: 'harvester_machine_guests_over_budget',
      help: 'Guest clusters over their budget (more PersistentVolumes of the Harvester CSI driver than --guest-max-volumes, a list that never ends, an answer over the cap): their volumes are not recorded until they are back within it.',
      registers: [registry],
    }),
    inventories: new Counter({
      name: 'harvester_machine_guest_inventories_total',
      help: 'Last inventories taken as a whole-cluster deletion starts, by where the volumes came from (guest, watch, none).',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
  };
}
export type OwnershipMetrics = ReturnType<typeof ownershipMetrics>;

/** One host volume of a last inventory, and what became of its record. */
export interface InventoriedVolume {
  namespace: string;
  name: string;
  pv: string;
  claim?: string;
  outcome: string;
}

export interface Inventory {
  cluster: string;
  takenAt: string;
  /** Where the list of the guest's volumes came from. */
  source: string;
  volumes: InventoriedVolume[];
  /** What could not be recorded, and why (retried by the volume cleanup). */
  failures: string[];
}

interface RecordResult {
  recorded: InventoriedVolume[];
  failures: string[];
}

export interface VolumeOwnershipDeps {
  caches: RancherCaches;
  harvester: HarvesterClients;
  watches: GuestWatches;
  events: EventRecorder;
  metrics: OwnershipMetrics;
  logger: Logger;
  mode: GuestVolumesMode;
  onCredentialRejected: (secretKey: ObjectKey) => void;
  /** A guest's PV dropped as malformed (the last inventory's read). */
  onDropped?: (reason: string) => void;
  now?: () => number;
}

const MAX_RETRY_MS = 300_000;

/**
 * Recording on Harvester which host volumes are a guest cluster's, while it lives, so that
 * deleting it removes them all, attached or not:
 * for each guest cluster on Harvester in the controller's scope, its PVs of the Harvester CSI
 * driver (one watch per cluster, guest-watches.ts) name their host PVCs; each one is labelled
 * `guestcluster.harvesterhci.io/name=<cluster>` (the label the driver's whole-cluster removal
 * selects on, so the Go driver's removal finds them too), with the cluster's own credential
 * (cluster-targets.ts, as the gate and the load balancer cleanup choose it), only when Harvester
 * corroborates the guest's claim (the
 * CSI driver's shape, made after the cluster, no other claimant ever); every claimant is listed
 * on the PVC, and a volume claimed but not corroborated, or contested, is left unlabelled (a
 * label we wrote is taken back) with an Event: nothing deletes it automatically. When the cluster's deletion starts (its
 * first pre-terminate hook), a last inventory is read from the guest while it may still
 * answer, recorded the same way, kept for the status and an Event, and the watch stopped.
 * Harvester sees one GET per new PV (one PATCH more when it is labelled) and nothing while
 * nothing changes; a PVC seen once is not asked about again.
 */
export class VolumeOwnership {
  readonly inventories = new KeyMap<Inventory>();
  private readonly pendingInventories = new KeyMap<Promise<Inventory>>();
  /** Per cluster: host volumes asked about already, and what was found. */
  private readonly known = new KeyMap<Map<string, string>>();
  private readonly attempts = new KeyMap<number>();
  /** PVCs whose contest or missing evidence was already reported (one Event each). */
  private readonly reported = new Set<string>();
  /** Per cluster: when it was made (its Rancher objects' earliest creationTimestamp). */
  private readonly created = new KeyMap<string>();

  constructor(private readonly deps: VolumeOwnershipDeps) {}

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** The cluster's Rancher object Events go on, if any is left. */
  private subject(cluster: ObjectKey): { type: ResourceType; object: KubeObject } | undefined {
    const prov = this.deps.caches.provisioningClusters.get(cluster);
    if (prov) return { type: Resources.provisioningCluster, object: prov };
    const capi = this.deps.caches.capiClusters.get(cluster);
    return capi ? { type: Resources.capiCluster, object: capi } : undefined;
  }

  private record(cluster: ObjectKey, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const subject = this.subject(cluster);
    if (subject) this.deps.events.record(subject.type, subject.object, type, reason, message);
  }

  /** The watch changed state: an Event when it could not reach the guest, and when it can again. */
  onWatchState(cluster: ObjectKey, state: GuestWatchState, detail: string): void {
    this.publishWatches();
    const name = formatKey(cluster);
    if (state === 'watching')
      this.record(
        cluster,
        'Normal',
        OwnershipReasons.watching,
        `watching the PersistentVolumes of guest cluster ${name} in its own apiserver`,
      );
    else if (state === 'over-budget')
      this.record(
        cluster,
        'Warning',
        OwnershipReasons.overBudget,
        `guest cluster ${name} is over its budget: ${detail}; what it answered is not kept, its host volumes are not recorded from it, and it is asked again with backoff`,
      );
    else if (state !== 'connecting' && state !== 'waiting')
      this.record(
        cluster,
        'Warning',
        OwnershipReasons.unreachable,
        `cannot watch the PersistentVolumes of guest cluster ${name} (${state}): ${detail}; its host volumes are recorded once it answers, and at its deletion from what was last seen`,
      );
  }

  publishWatches(): void {
    const counts = this.deps.watches.counts();
    replaceAll(
      this.deps.metrics.watches,
      [...counts].map(([state, n]) => [{ state }, n]),
    );
    this.deps.metrics.overBudget.set(counts.get('over-budget') ?? 0);
  }

  /** When the cluster was made, as Rancher's apiserver wrote it (kept once seen). */
  private clusterCreated(cluster: ObjectKey): string | undefined {
    const times = [
      this.deps.caches.capiClusters.get(cluster)?.metadata.creationTimestamp,
      this.deps.caches.provisioningClusters.get(cluster)?.metadata.creationTimestamp,
      this.created.get(cluster),
    ].filter((t): t is string => typeof t === 'string' && !Number.isNaN(Date.parse(t)));
    const earliest = times.sort((a, b) => Date.parse(a) - Date.parse(b))[0];
    if (earliest !== undefined) this.created.set(cluster, earliest);
    return earliest;
  }

  async reconcile(cluster: ObjectKey): Promise<ReconcileResult> {
    const { caches, watches } = this.deps;
    const capi = caches.capiClusters.get(cluster);
    const prov = caches.provisioningClusters.get(cluster);
    this.clusterCreated(cluster);
    const targets = learnTargets(caches, cluster.namespace, cluster.name);
    if ((!capi && !prov) || targets.size === 0) {
      // Gone, or no machine on Harvester (yet, or any more).
      await watches.stop(cluster);
      this.publishWatches();
      if (!capi && !prov) this.forget(cluster);
      return;
    }
    const deleting = Boolean(capi?.metadata.deletionTimestamp || prov?.metadata.deletionTimestamp);
    if (this.deps.mode !== 'watch' || (deleting && this.inventories.has(cluster))) {
      if (watches.has(cluster)) {
        await watches.stop(cluster);
        this.publishWatches();
      }
      return;
    }
    watches.ensure(cluster, prov ? (prov.status?.clientSecretName ? 'written' : 'not-yet') : 'unknown');
    const list = watches.volumes(cluster);
    if (!list) return; // the watch's first list brings us back
    const result = await this.recordAll(cluster, targets, list, 'watch', false);
    if (result.failures.length === 0) {
      this.attempts.delete(cluster);
      return;
    }
    const attempt = (this.attempts.get(cluster) ?? 0) + 1;
    this.attempts.set(cluster, attempt);
    this.record(
      cluster,
      'Warning',
      OwnershipReasons.failed,
      `cannot record the host volumes of guest cluster ${formatKey(cluster)}: ${result.failures.join('; ')}; retrying`,
    );
    return { requeueAfterMs: Math.min(MAX_RETRY_MS, 1_000 * 2 ** Math.min(attempt - 1, 12)) };
  }

  private forget(cluster: ObjectKey): void {
    this.known.delete(cluster);
    this.attempts.delete(cluster);
    this.inventories.delete(cluster);
    this.pendingInventories.delete(cluster);
    this.created.delete(cluster);
  }

  /**
   * The last inventory of a cluster whose whole deletion starts: the guest's PVs read once more
   * (at most `timeoutMs`), else the watch's last state, recorded on Harvester. Once per deletion;
   * never throws; resolves within `timeoutMs` (what is still being written then goes on).
   */
  finalInventory(cluster: ObjectKey, timeoutMs: number): Promise<Inventory | undefined> {
    if (this.deps.mode === 'off' || timeoutMs <= 0) return Promise.resolve(this.inventories.get(cluster));
    let pending = this.pendingInventories.get(cluster);
    if (!pending) {
      pending = this.takeInventory(cluster, timeoutMs);
      this.pendingInventories.set(cluster, pending);
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>(
      (resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)),
    );
    return Promise.race([pending, late]).finally(() => clearTimeout(timer));
  }

  private async takeInventory(cluster: ObjectKey, timeoutMs: number): Promise<Inventory> {
    const key = formatKey(cluster);
    const takenAt = new Date(this.now()).toISOString();
    const targets = learnTargets(this.deps.caches, cluster.namespace, cluster.name);
    let list: GuestVolumeList | undefined;
    let source: string;
    try {
      const client = await this.deps.watches.client(cluster);
      list = harvesterVolumes(
        await listGuestVolumes(client, this.deps.watches.maxVolumes, (reason) =>
          this.deps.onDropped?.(reason),
        ),
      );
      if (list.malformed > 0) this.deps.metrics.malformed.inc(list.malformed);
      source = "the guest cluster's apiserver";
      this.deps.metrics.inventories.inc({ source: 'guest' });
    } catch (err) {
      const why = redact(err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err));
      list = this.deps.watches.volumes(cluster);
      source = list
        ? `the watch's last state (the guest's apiserver did not answer: ${why})`
        : `nothing (the guest's apiserver did not answer: ${why}; no watch had listed it)`;
      this.deps.metrics.inventories.inc({ source: list ? 'watch' : 'none' });
    }
    await this.deps.watches.stop(cluster);
    this.publishWatches();
    const result = list
      ? await this.recordAll(cluster, targets, list, 'last inventory', true, Math.max(1_000, timeoutMs))
      : { recorded: [], failures: [] };
    const inventory: Inventory = {
      cluster: key,
      takenAt,
      source,
      volumes: result.recorded,
      failures: result.failures,
    };
    this.inventories.set(cluster, inventory);
    // The Event says what stays and that it is ownership; the status says why in full.
    const names = inventory.volumes.map(
      (v) =>
        `${keyText(v.namespace, v.name)} (${v.outcome.replace(/^(kept, ownership [a-z ]+?): .*$/, '$1')})`,
    );
    this.record(
      cluster,
      list ? 'Normal' : 'Warning',
      OwnershipReasons.inventoried,
      `last inventory of guest cluster ${key} as its deletion starts, from ${source}: ${inventory.volumes.length} host volume(s) of the Harvester CSI driver${names.length ? `: ${names.join(', ')}` : ''}; those recorded go with the cluster (by its VMs' removals, else once its last VM is gone), those kept stay${list?.malformed ? `; ${list.malformed} entr${list.malformed === 1 ? 'y' : 'ies'} of its list were no PersistentVolume (dropped)` : ''}${result.failures.length ? `; not recorded: ${result.failures.join('; ')}` : ''}`,
    );
    return inventory;
  }

  /**
   * What the last inventory found in `namespace` but could not record: labelled now through
   * `client` (the volume cleanup's, before it decides).
   */
  async recordInventoried(cluster: ObjectKey, namespace: string, client: KubeClient): Promise<void> {
    const inventory = this.inventories.get(cluster);
    if (!inventory?.failures.length) return;
    const pvcs = await new HarvesterApi(client).listPvcs(namespace);
    // A volume that failed has no namespace yet (no target answered): try it in this one.
    for (const v of inventory.volumes.filter(
      (x) => (x.namespace === namespace || x.namespace === '') && x.outcome === 'not recorded',
    )) {
      const pvc = pvcs.find((p) => p.metadata.name === v.name);
      await this.recordOne(
        client,
        cluster,
        { pv: v.pv, hostPvc: v.name, ...(v.claim ? { claim: v.claim } : {}) },
        pvc,
        namespace,
        'last inventory',
      );
    }
  }

  /** Records every volume of `list` not asked about yet (all of them with `again`). */
  private async recordAll(
    cluster: ObjectKey,
    targets: Map<string, ClusterTarget>,
    list: GuestVolumeList,
    path: RecordPath,
    again: boolean,
    timeoutMs = 60_000,
  ): Promise<RecordResult> {
    const key = formatKey(cluster);
    const known = this.known.get(cluster) ?? new Map<string, string>();
    this.known.set(cluster, known);
    const todo = list.volumes.filter((v) => again || !known.has(v.hostPvc));
    const result: RecordResult = { recorded: [], failures: [] };
    if (todo.length === 0) return result;
    const deadline = this.now() + timeoutMs;
    const labelled: string[] = [];
    for (const volume of todo) {
      if (this.now() > deadline) {
        result.failures.push(`${volume.hostPvc}: no time left`);
        continue;
      }
      const outcome = await this.recordInTargets(cluster, targets, volume, path);
      if (outcome.kind === 'failed') {
        result.failures.push(outcome.message);
        result.recorded.push({ ...this.inventoried(volume, undefined), outcome: 'not recorded' });
        continue;
      }
      // Asked once: a PV whose PVC is not there (released, or another namespace) is asked again at the last inventory.
      known.set(volume.hostPvc, outcome.kind);
      if (outcome.kind === 'labelled')
        labelled.push(`${keyText(outcome.namespace, volume.hostPvc)} (${describeVolume(volume)})`);
      result.recorded.push({ ...this.inventoried(volume, outcome.namespace), outcome: outcome.text });
    }
    for (const v of list.refused) result.failures.push(`PersistentVolume ${v.pv}: ${v.reason}`);
    if (labelled.length)
      this.record(
        cluster,
        'Normal',
        OwnershipReasons.recorded,
        `recorded ${labelled.length} host volume(s) of guest cluster ${key} on Harvester from its PersistentVolumes (${path}): ${labelled.join(', ')}; they go with the cluster when it is deleted`,
      );
    return result;
  }

  private inventoried(
    volume: GuestVolume,
    namespace: string | undefined,
  ): Omit<InventoriedVolume, 'outcome'> {
    return {
      namespace: namespace ?? '',
      name: volume.hostPvc,
      pv: volume.pv,
      ...(volume.claim ? { claim: volume.claim } : {}),
    };
  }

  /** One volume in the cluster's VM namespaces, with each target's credential. */
  private async recordInTargets(
    cluster: ObjectKey,
    targets: Map<string, ClusterTarget>,
    volume: GuestVolume,
    path: RecordPath,
  ): Promise<
    { kind: 'labelled' | 'known' | 'missing'; namespace: string | undefined; text: string } | TargetFailure
  > {
    const missing = {
      kind: 'missing' as const,
      namespace: undefined,
      text: "no such PVC in the VMs' namespace",
    };
    for (const target of targets.values()) {
      const outcome = await withTargetClient(
        {
          caches: this.deps.caches,
          harvester: this.deps.harvester,
          onCredentialRejected: this.deps.onCredentialRejected,
          now: this.now(),
        },
        target,
        `the host volumes of ${formatKey(cluster)}`,
        async (client) => {
          this.deps.metrics.harvesterRequests.inc();
          const pvc = await new HarvesterApi(client).findPvc(target.vmNamespace, volume.hostPvc);
          return this.recordOne(client, cluster, volume, pvc, target.vmNamespace, path);
        },
      );
      if (outcome.kind !== 'missing') return outcome;
    }
    return missing;
  }

  /** Decides and writes the record of one PVC (conflict-safe: the resourceVersion read). */
  private async recordOne(
    client: KubeClient,
    cluster: ObjectKey,
    volume: GuestVolume,
    first: PersistentVolumeClaim | undefined,
    namespace: string,
    path: RecordPath,
  ): Promise<{ kind: 'labelled' | 'known' | 'missing'; namespace: string | undefined; text: string }> {
    let pvc = first;
    for (let attempt = 0; ; attempt++) {
      const decision = decideOwnership({
        cluster: cluster.name,
        volume,
        pvc,
        clusterCreated: this.clusterCreated(cluster),
        now: new Date(this.now()),
        path,
      });
      switch (decision.action) {
        case 'missing':
          return { kind: 'missing', namespace: undefined, text: "no such PVC in the VMs' namespace" };
        case 'refused':
          return { kind: 'known', namespace, text: `not recorded: ${decision.reason}` };
        case 'recorded':
          this.report(cluster, volume, namespace, decision.outcome, decision.reason);
          return {
            kind: 'known',
            namespace,
            text: outcomeText(decision.outcome, decision.reason, undefined),
          };
        case 'write':
          try {
            this.deps.metrics.harvesterRequests.inc();
            await new HarvesterApi(client).patchPvcMetadata(namespace, volume.hostPvc, {
              resourceVersion: pvc?.metadata.resourceVersion,
              labels: decision.labels,
              annotations: decision.annotations,
            });
            this.report(cluster, volume, namespace, decision.outcome, decision.reason);
            const labelled = decision.labels[LABEL_GUEST_CLUSTER_NAME] === cluster.name;
            if (labelled) this.deps.metrics.labelled.inc({ path: path === 'watch' ? 'watch' : 'inventory' });
            return {
              kind: labelled ? 'labelled' : 'known',
              namespace,
              text: outcomeText(decision.outcome, decision.reason, labelled ? path : undefined),
            };
          } catch (err) {
            // Changed since it was read (another labeller, Harvester's controller): read, decide again.
            if (!isConflict(err) || attempt >= 2) throw err;
            this.deps.metrics.harvesterRequests.inc();
            pvc = await new HarvesterApi(client).findPvc(namespace, volume.hostPvc);
          }
      }
    }
  }

  /** One Warning per host volume whose ownership is contested or not corroborated. */
  private report(
    cluster: ObjectKey,
    volume: GuestVolume,
    namespace: string,
    outcome: OwnershipOutcome,
    reason: string,
  ): void {
    if (outcome === 'corroborated') return;
    const id = keyText(namespace, volume.hostPvc);
    if (this.reported.has(`${outcome} ${id}`)) return;
    this.reported.add(`${outcome} ${id}`);
    const contested = outcome === 'contested';
    (contested ? this.deps.metrics.conflicts : this.deps.metrics.uncorroborated).inc();
    this.record(
      cluster,
      'Warning',
      contested ? OwnershipReasons.otherCluster : OwnershipReasons.notCorroborated,
      `host volume ${id}, named by ${describeVolume(volume)} of guest cluster ${formatKey(cluster)}: ownership ${outcome} (${reason}); not labelled for ${cluster.name}, so it is not deleted with it${contested ? ' nor with any other cluster' : ''}: delete it by hand once you know whose it is`,
    );
  }

  /** The last inventories, for the status summary. */
  summary(): Inventory[] {
    return [...this.inventories.values()].sort((a, b) => a.cluster.localeCompare(b.cluster));
  }

  /** Host volumes of `namespace` that live guest clusters' PVs name (the cleanup never deletes them). */
  namedByLiveClusters(except: ObjectKey): Map<string, string[]> {
    return this.deps.watches.namedByOthers(except);
  }
}

/** What became of a volume's record, as the inventory and the status show it. */
function outcomeText(outcome: OwnershipOutcome, reason: string, labelledBy: RecordPath | undefined): string {
  if (outcome === 'corroborated') return labelledBy ? `labelled now (${labelledBy})` : 'recorded before';
  return `kept, ownership ${outcome}: ${reason}; delete it by hand once you know whose it is`;
}

function describeVolume(v: GuestVolume): string {
  return `guest PersistentVolume ${v.pv}${v.claim ? `, claim ${v.claim}` : ''}`;
}
