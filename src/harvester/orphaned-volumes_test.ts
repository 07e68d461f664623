import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { pvcVolume, vmiWith, vmWith } from './testing/fixtures.js';
import type { VirtualMachine } from './types.js';
import {
  classify,
  classifyContext,
  findOrphans,
  volumesToDelete,
  type ClusterScan,
  type EventLike,
  type HostPvc,
} from './orphaned-volumes.js';

const NOW = new Date('2025-06-01T12:00:00Z');
const OLD = '2025-05-01T12:00:00Z';
const CLUSTER = 'guestcluster.harvesterhci.io/name';
const uid = (n: number): string => `pvc-${String(n).padStart(8, '0')}-1111-2222-3333-444455556666`;

function hostPvc(name: string, extra: Partial<HostPvc['metadata']> = {}, size = '1Gi'): HostPvc {
  return {
    metadata: { name, namespace: 'default', uid: `u-${name}`, creationTimestamp: OLD, ...extra },
    spec: { resources: { requests: { storage: size } } },
  };
}

function clusterVm(
  name: string,
  cluster: string,
  volumes = [pvcVolume('disk-0', `${name}-disk-0-abcde`)],
  extra: Partial<VirtualMachine['metadata']> = {},
): VirtualMachine {
  const vm = vmWith(name, 'default', volumes);
  vm.metadata = { ...vm.metadata, labels: { [CLUSTER]: cluster }, ...extra };
  return vm;
}

const scanOf = (partial: Partial<ClusterScan>): ClusterScan => ({
  pvcs: [],
  vms: [],
  vmis: [],
  pods: [],
  events: [],
  ...partial,
});
const listed = (scan: ClusterScan, minAgeMs = 0): Record<string, string[]> =>
  Object.fromEntries(
    findOrphans(scan, { now: NOW, minAgeMs }).groups.map((g) => [
      g.cluster ?? '(unknown)',
      g.volumes.map((v) => v.name),
    ]),
  );

describe('findOrphans', () => {
  it('lists a volume of uncertain ownership as kept, with why, and --delete never takes it (ADR 0021)', () => {
    const contested = hostPvc(uid(7), {
      annotations: { 'harvester-machine.io/guest-claimants': 'a,b' },
    });
    const standalone = hostPvc('db-backup', {
      annotations: {
        'harvester-machine.io/guest-claimants': 'a',
        'harvester-machine.io/ownership-evidence':
          "not corroborated: guest cluster a's PersistentVolume x names it, but its name is not one the Harvester CSI driver gives",
      },
    });
    const report = findOrphans(scanOf({ pvcs: [contested, standalone] }), { now: NOW, minAgeMs: 0 });
    assert.deepEqual(report.groups, []);
    assert.deepEqual(
      report.skipped.claimed.map((s) => s.name),
      ['db-backup', uid(7)],
    );
    assert.match(
      report.skipped.claimed[1]?.reason ?? '',
      /named by guest clusters a, b: ownership contested/,
    );
    assert.match(report.skipped.claimed[0]?.reason ?? '', /not corroborated/);
    assert.deepEqual(volumesToDelete(report, true), []);
  });

  it('groups leaked volumes by guest cluster, unknown last, and says how the cluster is known', () => {
    const report = findOrphans(
      scanOf({
        pvcs: [
          hostPvc(uid(1), { labels: { [CLUSTER]: 'b' } }),
          hostPvc(uid(2)),
          hostPvc(uid(3), { labels: { [CLUSTER]: 'a' } }),
        ],
      }),
      { now: NOW, minAgeMs: 0 },
    );
    assert.deepEqual(
      report.groups.map((g) => [g.cluster, g.volumes.map((v) => v.name)]),
      [
        ['a', [uid(3)]],
        ['b', [uid(1)]],
        [null, [uid(2)]],
      ],
    );
    assert.equal(report.groups[0]?.volumes[0]?.clusterSource, `label ${CLUSTER}`);
    assert.equal(report.groups[0]?.volumes[0]?.size, '1Gi');
    assert.equal(report.groups[0]?.volumes[0]?.ageMs, 31 * 86_400_000);
  });

  it('never lists a volume that a VM (being deleted too), a VM instance or a pod uses', () => {
    const hot = uid(1);
    const boot = 'm1-disk-0-abcde';
    const template = 'm2-disk-0-fghij';
    const vmiOnly = uid(2);
    const statusOnly = uid(3);
    const podOnly = uid(4);
    const terminating = uid(5);
    const scan = scanOf({
      pvcs: [boot, hot, template, vmiOnly, statusOnly, podOnly, terminating].map((n) =>
        hostPvc(n, { labels: { [CLUSTER]: 'gone' } }),
      ),
      vms: [
        vmWith('m1', 'default', [pvcVolume('disk-0', boot), pvcVolume(hot, hot, true)]),
        vmWith('m2', 'default', [], {
          'harvesterhci.io/volumeClaimTemplates': JSON.stringify([{ metadata: { name: template } }]),
        }),
        {
          ...vmWith('m3', 'default', [pvcVolume(terminating, terminating, true)]),
          metadata: { name: 'm3', namespace: 'default', deletionTimestamp: OLD },
        },
      ],
      vmis: [
        vmiWith(
          'm4',
          'default',
          { volumeStatus: [{ name: 'x', persistentVolumeClaimInfo: { claimName: statusOnly } }] },
          [pvcVolume(vmiOnly, vmiOnly, true)],
        ),
      ],
      pods: [
        {
          metadata: { name: 'p', namespace: 'default' },
          spec: { volumes: [{ persistentVolumeClaim: { claimName: podOnly } }] },
        },
      ],
    });
    const report = findOrphans(scan, { now: NOW, minAgeMs: 0 });
    assert.deepEqual(report.groups, []);
    const reasons = Object.fromEntries(report.skipped.inUse.map((s) => [s.name, s.reason]));
    assert.match(reasons[hot] ?? '', /VM default\/m1/);
    assert.match(reasons[template] ?? '', /volume claim template/);
    assert.match(reasons[terminating] ?? '', /VM default\/m3 \(being deleted\)/);
    assert.match(reasons[vmiOnly] ?? '', /VM instance default\/m4/);
    assert.match(reasons[statusOnly] ?? '', /volume status x/);
    assert.match(reasons[podOnly] ?? '', /pod default\/p/);
  });

  it('keeps volumes of a guest cluster that still has VMs, known by label, removal history or event', () => {
    const labelled = hostPvc(uid(1), { labels: { [CLUSTER]: 'live' } });
    const byHistory = hostPvc(uid(2));
    const byEvent = hostPvc(uid(3));
    const event: EventLike = {
      metadata: { namespace: 'default' },
      involvedObject: { kind: 'VirtualMachineInstance', name: 'live-1', namespace: 'default' },
      reason: 'VolumeReady',
      message: `hotplug volume ${uid(3)} is ready`,
      lastTimestamp: OLD,
    };
    const scan = scanOf({
      pvcs: [labelled, byHistory, byEvent],
      vms: [
        clusterVm('live-1', 'live'),
        clusterVm('live-2', 'live', [], {
          annotations: { 'harvesterhci.io/removedPersistentVolumeClaims': `a, ${uid(2)}` },
        }),
      ],
      events: [event],
    });
    const report = findOrphans(scan, { now: NOW, minAgeMs: 0 });
    assert.deepEqual(report.groups, []);
    assert.deepEqual(report.skipped.liveCluster.map((s) => s.name).sort(), [uid(1), uid(2), uid(3)]);
    assert.deepEqual(report.liveClusters, ['live']);
  });

  it('attributes an unlabelled volume to the cluster of the terminating VM that lists it, with the history', () => {
    const scan = scanOf({
      pvcs: [hostPvc(uid(7))],
      vms: [
        clusterVm('dead-1', 'dead', [], {
          deletionTimestamp: OLD,
          annotations: { 'harvesterhci.io/removedPersistentVolumeClaims': uid(7) },
        }),
      ],
    });
    const [group] = findOrphans(scan, { now: NOW, minAgeMs: 0 }).groups;
    assert.equal(group?.cluster, 'dead');
    assert.equal(group?.volumes[0]?.clusterSource, 'VM default/dead-1 that is removing it');
    assert.match(
      group?.volumes[0]?.history[0] ?? '',
      /VM default\/dead-1 \(being deleted\) lists it in harvesterhci.io\/removedPersistentVolumeClaims/,
    );
  });

  it('records events as history even when their VM is gone (the cluster stays unknown)', () => {
    const scan = scanOf({
      pvcs: [hostPvc(uid(8))],
      events: [
        {
          metadata: { namespace: 'default' },
          involvedObject: { kind: 'VirtualMachine', name: 'gone-1' },
          reason: 'Attached',
          message: `volume ${uid(8)} attached`,
          lastTimestamp: OLD,
        },
      ],
    });
    const [group] = findOrphans(scan, { now: NOW, minAgeMs: 0 }).groups;
    assert.equal(group?.cluster, null);
    assert.match(
      group?.volumes[0]?.history[0] ?? '',
      /^event Attached on VirtualMachine gone-1 at 2025-05-01/,
    );
  });

  it('leaves alone what is not a VM or guest-cluster volume, what is owned, being deleted or too new', () => {
    const scan = scanOf({
      pvcs: [
        hostPvc('data-prometheus-0'),
        hostPvc(uid(1), {
          ownerReferences: [
            { apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name: 'dv', uid: 'x' },
          ],
        }),
        hostPvc(uid(2), { deletionTimestamp: OLD }),
        hostPvc(uid(3), { creationTimestamp: '2025-06-01T11:55:00Z' }),
        hostPvc('m9-disk-1-xyz12'),
        hostPvc('restored', { annotations: { 'harvesterhci.io/imageId': 'default/img' } }),
      ],
    });
    const report = findOrphans(scan, { now: NOW, minAgeMs: 10 * 60_000 });
    assert.equal(report.notConsidered, 1);
    assert.deepEqual(
      report.skipped.owned.map((s) => s.name),
      [uid(1)],
    );
    assert.deepEqual(
      report.skipped.deleting.map((s) => s.name),
      [uid(2)],
    );
    assert.deepEqual(
      report.skipped.tooNew.map((s) => s.name),
      [uid(3)],
    );
    assert.deepEqual(listed(scan, 10 * 60_000), { '(unknown)': ['m9-disk-1-xyz12', 'restored'] });
  });

  it('deletes known clusters only, unless unknown ones are asked for', () => {
    const report = findOrphans(
      scanOf({ pvcs: [hostPvc(uid(1), { labels: { [CLUSTER]: 'a' } }), hostPvc(uid(2))] }),
      { now: NOW, minAgeMs: 0 },
    );
    assert.deepEqual(
      volumesToDelete(report, false).map((v) => v.name),
      [uid(1)],
    );
    assert.deepEqual(
      volumesToDelete(report, true).map((v) => v.name),
      [uid(1), uid(2)],
    );
  });

  it('re-checked before a delete, a volume that a VM started using meanwhile is not an orphan any more', () => {
    const pvc = hostPvc(uid(1), { labels: { [CLUSTER]: 'a' } });
    assert.equal(classify(pvc, classifyContext(scanOf({ pvcs: [pvc] }), NOW, 0)).kind, 'orphan');
    const now = classify(
      pvc,
      classifyContext(
        scanOf({ pvcs: [pvc], vms: [vmWith('x', 'default', [pvcVolume('hp', uid(1), true)])] }),
        NOW,
        0,
      ),
    );
    assert.equal(now.kind, 'skip');
  });

  it('property: a PVC that any VM references is never listed, whatever else there is', () => {
    const names = fc.constantFrom(...[1, 2, 3, 4, 5, 6].map(uid), 'a-disk-0-abcde', 'other');
    fc.assert(
      fc.property(
        fc.uniqueArray(names, { minLength: 1 }),
        fc.array(
          fc.record({
            refs: fc.uniqueArray(names),
            cluster: fc.option(fc.constantFrom('a', 'b')),
            deleting: fc.boolean(),
          }),
          { maxLength: 4 },
        ),
        fc.array(fc.tuple(names, fc.option(fc.constantFrom('a', 'b', 'c'))), { maxLength: 6 }),
        (pvcNames, vmSpecs, labels) => {
          const pvcs = pvcNames.map((n) => {
            const label = labels.find(([l]) => l === n)?.[1];
            return hostPvc(n, label ? { labels: { [CLUSTER]: label } } : {});
          });
          const vms = vmSpecs.map((spec, i) => {
            const vm = vmWith(
              `vm-${i}`,
              'default',
              spec.refs.map((r) => pvcVolume(r, r, i % 2 === 0)),
            );
            vm.metadata = {
              ...vm.metadata,
              ...(spec.cluster ? { labels: { [CLUSTER]: spec.cluster } } : {}),
              ...(spec.deleting ? { deletionTimestamp: OLD } : {}),
            };
            return vm;
          });
          const referenced = new Set(vmSpecs.flatMap((s) => s.refs));
          const report = findOrphans(scanOf({ pvcs, vms }), { now: NOW, minAgeMs: 0 });
          for (const v of report.groups.flatMap((g) => g.volumes)) {
            assert.ok(!referenced.has(v.name), `${v.name} is referenced`);
            const live = vms.some(
              (vm) =>
                !vm.metadata.deletionTimestamp &&
                v.cluster !== undefined &&
                vm.metadata.labels?.[CLUSTER] === v.cluster,
            );
            assert.ok(!live, `${v.name} belongs to a live cluster`);
          }
        },
      ),
    );
  });
});
