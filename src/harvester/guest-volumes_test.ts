import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { PersistentVolume } from '../api/core.js';
import {
  ANNOTATION_GUEST_CLAIM,
  ANNOTATION_GUEST_VOLUME,
  ANNOTATION_OWNERSHIP_RECORDED,
  HARVESTER_CSI_DRIVER,
  decideOwnership,
  describeRecord,
  harvesterVolumes,
} from './guest-volumes.js';
import { LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import type { PersistentVolumeClaim } from './types.js';

const pv = (
  name: string,
  driver: string,
  handle: unknown,
  claim?: { namespace?: string; name?: string },
): PersistentVolume => ({
  metadata: { name },
  spec: { csi: { driver, volumeHandle: handle as string }, ...(claim ? { claimRef: claim } : {}) },
});

const pvc = (name: string, meta: Partial<PersistentVolumeClaim['metadata']> = {}): PersistentVolumeClaim => ({
  metadata: { name, namespace: 'vms', resourceVersion: '7', ...meta },
  spec: {},
});

const NOW = new Date('2026-03-01T10:00:00Z');

describe('the guest cluster volumes its PVs name', () => {
  it("takes the Harvester driver's PVs only, each handle once, with the bound claim", () => {
    const list = harvesterVolumes([
      pv('pvc-2', HARVESTER_CSI_DRIVER, 'pvc-2', { namespace: 'default', name: 'data-web-0' }),
      pv('pvc-1', HARVESTER_CSI_DRIVER, 'pvc-1'),
      pv('local-1', 'rancher.io/local-path', 'pvc-3'),
      pv('copy-of-2', HARVESTER_CSI_DRIVER, 'pvc-2'),
      { metadata: { name: 'nfs' }, spec: {} },
    ]);
    assert.deepEqual(list.volumes, [
      { pv: 'copy-of-2', hostPvc: 'pvc-2' },
      { pv: 'pvc-1', hostPvc: 'pvc-1' },
    ]);
    assert.deepEqual(list.refused, []);
  });

  it('never uses a handle that can be no PVC name, nor quotes such text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (handle) => {
        const list = harvesterVolumes([
          pv('pv-x', HARVESTER_CSI_DRIVER, handle, { namespace: 'a,b', name: 'c' }),
        ]);
        for (const v of list.volumes) {
          assert.match(v.hostPvc, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
          assert.ok(v.hostPvc.length <= 253);
          assert.equal(v.claim, undefined, 'a claimRef that is no object name is not recorded');
        }
        // A fixed reason (any text taken from the handle could quote it): never the handle itself.
        for (const r of list.refused)
          assert.deepEqual(r, {
            pv: 'pv-x',
            reason: 'its volumeHandle can be no PVC name (not a DNS-1123 subdomain)',
          });
      }),
    );
    assert.deepEqual(harvesterVolumes([pv('pv-y', HARVESTER_CSI_DRIVER, 42)]).refused, [
      { pv: 'pv-y', reason: 'its volumeHandle can be no PVC name (not a DNS-1123 subdomain)' },
    ]);
  });
});

describe('recording ownership on a host PVC', () => {
  const volume = { pv: 'pvc-1', hostPvc: 'pvc-1', claim: 'default/data-web-0' };
  const decide = (p: PersistentVolumeClaim | undefined, cluster = 'harv01') =>
    decideOwnership({ cluster, volume, pvc: p, now: NOW, path: 'watch' });

  it('labels an unlabelled PVC with the cluster name the removal selects on, and says which guest volume', () => {
    assert.deepEqual(decide(pvc('pvc-1')), {
      action: 'label',
      labels: { [LABEL_GUEST_CLUSTER_NAME]: 'harv01' },
      annotations: {
        [ANNOTATION_GUEST_VOLUME]: 'pvc-1',
        [ANNOTATION_GUEST_CLAIM]: 'default/data-web-0',
        [ANNOTATION_OWNERSHIP_RECORDED]: '2026-03-01T10:00:00.000Z watch',
      },
    });
  });

  it('never relabels one of another cluster; leaves its own alone; reports a missing one', () => {
    assert.deepEqual(decide(pvc('pvc-1', { labels: { [LABEL_GUEST_CLUSTER_NAME]: 'harv02' } })), {
      action: 'other-cluster',
      owner: 'harv02',
    });
    assert.deepEqual(decide(pvc('pvc-1', { labels: { [LABEL_GUEST_CLUSTER_NAME]: 'harv01' } })), {
      action: 'recorded',
    });
    assert.deepEqual(decide(undefined), { action: 'missing' });
  });

  it('refuses VM disks, owned PVCs and a cluster name that is no label value', () => {
    assert.equal(
      decide(pvc('pvc-1', { annotations: { 'harvesterhci.io/imageId': 'default/img' } })).action,
      'refused',
    );
    assert.equal(
      decide(
        pvc('pvc-1', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u' }] }),
      ).action,
      'refused',
    );
    assert.equal(decide(pvc('pvc-1'), 'x'.repeat(64)).action, 'refused');
    assert.equal(decide(pvc('pvc-1'), '').action, 'refused');
  });

  it('describes a record for the dry run', () => {
    const d = decide(pvc('pvc-1'));
    assert.equal(d.action, 'label');
    if (d.action !== 'label') return;
    assert.equal(
      describeRecord({ metadata: { annotations: d.annotations } }),
      "the guest's PersistentVolume pvc-1 (claim default/data-web-0) names it; recorded by harvester-machine-controller at 2026-03-01T10:00:00.000Z by its watch",
    );
    assert.equal(describeRecord({ metadata: {} }), '');
    // Annotations anyone editing PVCs may write: only what the controller writes is shown.
    assert.equal(
      describeRecord({
        metadata: {
          annotations: {
            [ANNOTATION_GUEST_VOLUME]: 'pvc-1',
            [ANNOTATION_GUEST_CLAIM]: 'a/b/c',
            [ANNOTATION_OWNERSHIP_RECORDED]: 'yesterday\nby hand',
          },
        },
      }),
      "the guest's PersistentVolume pvc-1 names it; recorded by harvester-machine-controller",
    );
    assert.equal(
      describeRecord({ metadata: { annotations: { [ANNOTATION_GUEST_VOLUME]: 'Not A Name' } } }),
      '',
    );
  });
});
