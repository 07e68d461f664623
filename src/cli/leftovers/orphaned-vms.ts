// The orphaned-VM part of `leftovers` (harvester#7940): driver-made VMs of guest clusters that
// Rancher no longer has (src/harvester/orphaned-vms.ts). Harvester cannot tell them, so this
// needs Rancher's local cluster too (--rancher-kubeconfig): its provisioning and Cluster API
// Clusters and its HarvesterMachines, in every namespace. Deleted one by one, each re-checked
// against both first and deleted only as the VM that was listed (uid), with Foreground
// propagation (its VM instance first); its volumes are then what `leftovers` lists as orphaned.
import {
  findOrphanedVms,
  type OrphanedVm,
  type OrphanedVmScan,
  type VmLike,
} from '../../harvester/orphaned-vms.js';
import type { HarvesterApi } from '../../harvester-access/harvester-api.js';
import type { KubeClient } from '../../kube/client.js';
import { isConflict, isNotFound } from '../../kube/errors.js';
import { Resources, type KubeObject } from '../../kube/resources.js';
import { redact } from '../../log/redact.js';
import { rancherInstanceName } from '../../rancher/names.js';
import { keyText } from '../../api/object-key.js';

export type VmScan = { scan: OrphanedVmScan } | { notChecked: string };

async function rancherRecords(rancher: KubeClient) {
  // A kind Rancher does not serve (no Cluster API installed yet) has no objects.
  const listed = <T extends KubeObject>(type: typeof Resources.capiCluster) =>
    rancher.list<T>(type, {}).catch((err: unknown) => {
      if (isNotFound(err)) return { items: [] as T[] };
      throw err;
    });
  const [prov, capi, machines] = await Promise.all([
    listed<KubeObject>(Resources.provisioningCluster),
    listed<KubeObject>(Resources.capiCluster),
    listed<KubeObject & { spec?: { vmNamespace?: string } }>(Resources.harvesterMachine),
  ]);
  return {
    clusters: new Set([...prov.items, ...capi.items].map((c) => c.metadata.name)),
    machineVms: new Set(
      machines.items.map((m) => {
        const vm = rancherInstanceName(m.metadata.name);
        return m.spec?.vmNamespace ? keyText(m.spec.vmNamespace, vm) : vm;
      }),
    ),
  };
}

export async function scanOrphanedVms(
  rancher: KubeClient | undefined,
  vms: readonly VmLike[],
  minAgeMs: number,
  namespace?: string,
): Promise<VmScan> {
  if (!rancher)
    return {
      notChecked:
        'whether their guest clusters exist is known to Rancher only: pass --rancher-kubeconfig <file> (Rancher local cluster, read access to clusters and harvestermachines)',
    };
  const here = namespace === undefined ? vms : vms.filter((v) => v.metadata.namespace === namespace);
  return { scan: findOrphanedVms(here, await rancherRecords(rancher), { now: new Date(), minAgeMs }) };
}

export function renderVmReport(vms: VmScan): string[] {
  if ('notChecked' in vms) return [`Orphaned VMs not checked: ${vms.notChecked}`];
  const { orphans } = vms.scan;
  if (orphans.length === 0)
    return ['No orphaned VMs (every guest-cluster VM belongs to a cluster Rancher has)'];
  return [
    `VMs of guest clusters Rancher no longer has (${orphans.length}):`,
    ...orphans.map((o) => `  ${keyText(o.namespace, o.name)} of guest cluster ${o.cluster}: ${o.reason}`),
  ];
}

export function vmReportJson(vms: VmScan): Record<string, unknown> {
  return 'notChecked' in vms
    ? { notChecked: vms.notChecked }
    : { orphaned: vms.scan.orphans, skipped: vms.scan.skipped };
}

export interface VmDeletionOutcome {
  deleted: string[];
  skipped: Array<{ vm: string; reason: string }>;
  failed: Array<{ vm: string; error: string }>;
}

/** Each VM re-checked (Rancher's records read again, the VM read again) right before its delete. */
export async function deleteOrphanedVms(
  harvester: HarvesterApi,
  rancher: KubeClient,
  orphans: readonly OrphanedVm[],
  minAgeMs: number,
): Promise<VmDeletionOutcome> {
  const outcome: VmDeletionOutcome = { deleted: [], skipped: [], failed: [] };
  for (const o of orphans) {
    const id = keyText(o.namespace, o.name);
    try {
      const current = await harvester.findVm(o.namespace, o.name);
      const again = current
        ? findOrphanedVms([current], await rancherRecords(rancher), { now: new Date(), minAgeMs })
        : undefined;
      const still = again?.orphans.find((x) => x.uid === o.uid && x.cluster === o.cluster);
      if (!still) {
        outcome.skipped.push({
          vm: id,
          reason: current
            ? (again?.skipped[0]?.reason ?? 'no longer the VM that was listed')
            : 'already gone',
        });
        continue;
      }
      await harvester.deleteVm({
        metadata: { namespace: o.namespace, name: o.name, ...(o.uid ? { uid: o.uid } : {}) },
      });
      outcome.deleted.push(id);
    } catch (err) {
      if (isConflict(err)) outcome.skipped.push({ vm: id, reason: 'replaced since it was listed' });
      else outcome.failed.push({ vm: id, error: redact((err as Error).message) });
    }
  }
  return outcome;
}
