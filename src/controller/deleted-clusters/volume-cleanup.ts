// The host volumes of a guest cluster deleted as a whole, deleted once its last VM is gone,
// as its load balancers are: the same scope,
// opt-out, credentials, retries and deadline (deleted-cluster-cleanup.ts). The VMs' removals
// delete what they can (boot disks, hot-plugged volumes, and with a driver from v1.0.5 the
// labelled volumes no other VM uses); this deletes what they left: what an older driver does
// not select, what another VM of the cluster still used when one VM went, what was recorded
// only at the last inventory. The decision is src/harvester/cluster-volume-cleanup.ts: never a
// volume in use by any VM, VM instance or pod, nor one a live guest cluster's PV names.
import type { ObjectKey } from '../../api/object-key.js';
import { decideVolumeCleanup } from '../../harvester/cluster-volume-cleanup.js';
import { LABEL_GUEST_CLUSTER_NAME } from '../../harvester/labels.js';
import type { PodLike } from '../../harvester/orphaned-volumes.js';
import { isConflict, isForbidden, type KubeClient, type ReconcileResult } from '../../kube/index.js';
import type { Logger } from '../../log/logger.js';
import { Counter, type Registry } from 'prom-client';
import type { RancherCaches } from '../common/caches.js';
import {
  DeletedClusterCleanup,
  type DeletedCluster,
  type LeftoverKind,
  type TargetOutcome,
} from './deleted-cluster-cleanup.js';
import type { EventRecorder } from '../common/events.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { HarvesterApi } from '../../harvester-access/harvester-api.js';
import type { VolumeOwnership } from '../guest-volumes/volume-ownership.js';
import { keyText } from '../../api/object-key.js';

export const VolumeReasons = {
  deleted: 'HarvesterVolumesDeleted',
  noneLeft: 'HarvesterVolumesNoneLeft',
  skipped: 'HarvesterVolumeCleanupSkipped',
  refused: 'HarvesterVolumeCleanupRefused',
  failed: 'HarvesterVolumeCleanupFailed',
  abandoned: 'HarvesterVolumeCleanupAbandoned',
} as const;

export function volumeCleanupMetrics(registry: Registry) {
  return {
    results: new Counter({
      name: 'harvester_machine_volume_cleanups_total',
      help: 'Volume cleanups of deleted guest clusters, by result (deleted, none-left, opted-out, refused, abandoned, unknown-location) and Harvester namespace.',
      labelNames: ['result', 'namespace'] as const,
      registers: [registry],
    }),
    deleted: new Counter({
      name: 'harvester_machine_volumes_deleted_total',
      help: 'Host volumes of deleted guest clusters deleted by this controller (after the VMs were removed).',
      registers: [registry],
    }),
    failures: new Counter({
      name: 'harvester_machine_volume_cleanup_failures_total',
      help: 'Failed volume cleanup attempts, by reason.',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
  };
}
export type VolumeCleanupMetrics = ReturnType<typeof volumeCleanupMetrics>;

export interface VolumeCleanupDeps {
  caches: RancherCaches;
  harvester: HarvesterClients;
  events: EventRecorder;
  metrics: VolumeCleanupMetrics;
  logger: Logger;
  ownership: VolumeOwnership;
  deadlineMs: number;
  onCredentialRejected: (secretKey: ObjectKey) => void;
  now?: () => number;
}

export class VolumeCleanup {
  private readonly cleanup: DeletedClusterCleanup;

  constructor(private readonly deps: VolumeCleanupDeps) {
    const kind: LeftoverKind = {
      what: 'volumes',
      reasons: VolumeReasons,
      metrics: deps.metrics,
      cleanWith: (client, c, namespace) => this.cleanWith(client, c, namespace),
    };
    this.cleanup = new DeletedClusterCleanup(deps, kind);
  }

  reconcile(cluster: ObjectKey): Promise<ReconcileResult> {
    return this.cleanup.reconcile(cluster);
  }

  private async cleanWith(
    client: KubeClient,
    pending: DeletedCluster,
    namespace: string,
  ): Promise<TargetOutcome> {
    const { cluster } = pending;
    const key = { namespace: pending.namespace, name: cluster };
    // The VMs first: while one of the cluster is left, nothing else needs reading.
    const harvester = new HarvesterApi(client);
    const vms = await harvester.listVms(namespace);
    const first = decideVolumeCleanup({
      cluster,
      namespace,
      pvcs: [],
      vms,
      vmis: [],
      pods: [],
      liveClaims: new Map(),
    });
    if (first.action === 'wait') return { kind: 'wait', reason: first.reason };
    await this.deps.ownership.recordInventoried(key, namespace, client);
    const [pvcs, vmis, pods] = await Promise.all([
      harvester.listPvcs(namespace, `${LABEL_GUEST_CLUSTER_NAME}=${cluster}`),
      harvester.listVmis(namespace),
      harvester
        .listPods(namespace)
        .then((pods) => pods as PodLike[])
        .catch((err: unknown) => {
          if (isForbidden(err)) return undefined;
          throw err;
        }),
    ]);
    const decision = decideVolumeCleanup({
      cluster,
      namespace,
      pvcs,
      vms,
      vmis,
      pods,
      liveClaims: this.deps.ownership.namedByLiveClusters(key),
    });
    const kept = (items: Array<{ name: string; reason: string }>): string =>
      items.length
        ? `; kept: ${items.map((k) => `${keyText(namespace, k.name)} (${k.reason})`).join(', ')}`
        : '';
    switch (decision.action) {
      case 'wait':
        return { kind: 'wait', reason: decision.reason };
      case 'refuse':
        this.deps.metrics.results.inc({ result: 'refused', namespace });
        this.cleanup.record(
          pending.subject,
          'Warning',
          VolumeReasons.refused,
          `the volumes of guest cluster ${cluster} in ${namespace} are not deleted: ${decision.reason}; grant the credential list on pods there, or check them with "harvester-machine leftovers"`,
        );
        return { kind: 'done' };
      case 'delete': {
        const deleted: string[] = [];
        for (const v of decision.volumes) {
          try {
            const gone = await harvester.deletePvc(namespace, v.name, v.uid);
            if (gone) deleted.push(keyText(namespace, v.name));
          } catch (err) {
            // Replaced by a new PVC of that name since it was listed: not the one decided on.
            if (!isConflict(err)) throw err;
          }
        }
        this.deps.metrics.deleted.inc(deleted.length);
        if (deleted.length === 0) {
          this.deps.metrics.results.inc({ result: 'none-left', namespace });
          this.cleanup.record(
            pending.subject,
            'Normal',
            VolumeReasons.noneLeft,
            `no volume of guest cluster ${cluster} is left in ${namespace}: its VMs' removals deleted every one recorded for it${kept(decision.kept)}`,
          );
          return { kind: 'done' };
        }
        this.deps.metrics.results.inc({ result: 'deleted', namespace });
        this.cleanup.record(
          pending.subject,
          'Normal',
          VolumeReasons.deleted,
          `deleted ${deleted.length} host volume(s) of guest cluster ${cluster} on Harvester once its last VM was gone (${deleted.join(', ')}): recorded for the cluster, used by nothing${kept(decision.kept)}`,
        );
        return { kind: 'done' };
      }
    }
  }
}
