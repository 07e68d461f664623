import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CREATOR, LABEL_CREATOR, LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import { findOrphanedVms, type VmLike } from './orphaned-vms.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const vm = (name: string, cluster: string | undefined, extra: Partial<VmLike['metadata']> = {}): VmLike => ({
  metadata: {
    name,
    namespace: 'vms',
    uid: `uid-${name}`,
    creationTimestamp: '2026-03-01T10:00:00Z',
    labels: { [LABEL_CREATOR]: CREATOR, ...(cluster ? { [LABEL_GUEST_CLUSTER_NAME]: cluster } : {}) },
    ...extra,
  },
});

describe('orphaned guest-cluster VMs', () => {
  it('lists a driver-made VM of a cluster Rancher no longer has, and nothing Rancher still knows', () => {
    const scan = findOrphanedVms(
      [
        vm('gone-1', 'gone'),
        vm('live-1', 'live'),
        vm('machine-still-known', 'gone2'),
        vm('fresh', 'gone', { creationTimestamp: '2026-03-01T11:59:00Z' }),
        vm('deleting', 'gone', { deletionTimestamp: '2026-03-01T11:00:00Z' }),
        vm('by-hand', undefined),
        { metadata: { name: 'not-ours', namespace: 'vms', labels: { [LABEL_GUEST_CLUSTER_NAME]: 'gone' } } },
      ],
      { clusters: new Set(['live']), machineVms: new Set(['vms/machine-still-known']) },
      { now: NOW, minAgeMs: 10 * 60_000 },
    );
    assert.deepEqual(
      scan.orphans.map((o) => [o.name, o.cluster, o.uid]),
      [['gone-1', 'gone', 'uid-gone-1']],
    );
    assert.match(
      scan.orphans[0]?.reason ?? '',
      /Rancher has no Cluster of that name and no HarvesterMachine/,
    );
    assert.deepEqual(
      scan.skipped.map((s) => s.name),
      ['deleting', 'fresh', 'live-1', 'machine-still-known'],
    );
  });

  it('never lists a VM of a cluster Rancher has, nor one a HarvesterMachine has, nor one not made by a driver', () => {
    const names = ['a', 'b', 'c'];
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            name: fc.constantFrom('v1', 'v2', 'v3', 'v4'),
            cluster: fc.option(fc.constantFrom(...names), { nil: undefined }),
            ours: fc.boolean(),
            ageMin: fc.integer({ min: 0, max: 100 }),
          }),
          { maxLength: 8 },
        ),
        fc.subarray(names),
        fc.subarray(['vms/v1', 'v2', 'other/v3']),
        (specs, clusters, machineVms) => {
          const vms = specs.map((s) => ({
            metadata: {
              name: s.name,
              namespace: 'vms',
              creationTimestamp: new Date(NOW.getTime() - s.ageMin * 60_000).toISOString(),
              labels: {
                ...(s.ours ? { [LABEL_CREATOR]: CREATOR } : {}),
                ...(s.cluster ? { [LABEL_GUEST_CLUSTER_NAME]: s.cluster } : {}),
              },
            },
          }));
          const scan = findOrphanedVms(
            vms,
            { clusters: new Set(clusters), machineVms: new Set(machineVms) },
            { now: NOW, minAgeMs: 10 * 60_000 },
          );
          for (const o of scan.orphans) {
            assert.ok(!clusters.includes(o.cluster));
            assert.ok(!machineVms.includes(`vms/${o.name}`) && !machineVms.includes(o.name));
            const source = vms.filter(
              (v) => v.metadata.name === o.name && v.metadata.labels[LABEL_GUEST_CLUSTER_NAME] === o.cluster,
            );
            assert.ok(source.some((v) => v.metadata.labels[LABEL_CREATOR] === CREATOR));
            assert.ok(
              source.some((v) => NOW.getTime() - Date.parse(v.metadata.creationTimestamp) >= 10 * 60_000),
            );
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
