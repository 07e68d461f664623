import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { PersistentVolume } from '../api/core.js';
import {
  ANNOTATION_GUEST_CLAIM,
  ANNOTATION_GUEST_CLAIMANTS,
  ANNOTATION_GUEST_VOLUME,
  ANNOTATION_OWNERSHIP_EVIDENCE,
  ANNOTATION_OWNERSHIP_RECORDED,
  HARVESTER_CSI_DRIVER,
  decideOwnership,
  describeRecord,
  harvesterVolumes,
  ownershipBar,
  type GuestVolume,
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

/** A host PVC as the CSI driver makes it (ReadWriteMany), made at CREATED unless told. */
const pvc = (
  name: string,
  meta: Partial<PersistentVolumeClaim['metadata']> = {},
  spec: PersistentVolumeClaim['spec'] = { accessModes: ['ReadWriteMany'], volumeMode: 'Block' },
): PersistentVolumeClaim => ({
  metadata: { name, namespace: 'vms', resourceVersion: '7', creationTimestamp: CREATED, ...meta },
  spec,
});

const NOW = new Date('2026-03-01T10:00:00Z');
/** The guest cluster harv01 was made at BORN (Rancher's apiserver), its volume at CREATED (Harvester's). */
const BORN = '2026-02-01T09:00:00Z';
const CREATED = '2026-02-01T09:20:00Z';
const UID1 = '0b5a1c3e-7f2d-4e8a-9c61-2d4f8a7b3e10';
const UID2 = '5d0e9f12-3a4b-4c5d-8e6f-7a8b9c0d1e2f';
const H1 = `pvc-${UID1}`;
const H2 = `pvc-${UID2}`;

describe('the guest cluster volumes its PVs name', () => {
  it("takes the Harvester driver's PVs only, each handle once (the PV named as it first), with the bound claim", () => {
    const list = harvesterVolumes([
      pv(H2, HARVESTER_CSI_DRIVER, H2, { namespace: 'default', name: 'data-web-0' }),
      pv(H1, HARVESTER_CSI_DRIVER, H1),
      pv('local-1', 'rancher.io/local-path', 'pvc-3'),
      pv('copy-of-2', HARVESTER_CSI_DRIVER, H2),
      { metadata: { name: 'nfs' }, spec: {} },
    ]);
    assert.deepEqual(list.volumes, [
      { pv: H1, hostPvc: H1 },
      { pv: H2, hostPvc: H2, claim: 'default/data-web-0' },
    ]);
    assert.deepEqual(list.refused, []);
    assert.equal(list.malformed, 0);
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

  it('drops and counts what is no PersistentVolume instead of throwing (a name that is no string threw in localeCompare)', () => {
    const hostile: unknown[] = [
      { metadata: { name: 42 }, spec: { csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: H1 } } },
      { metadata: { name: 'b' }, spec: { csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: H2 } } },
      null,
      'pv',
      { spec: {} },
      { metadata: null },
      { metadata: { name: 'c' }, spec: { csi: 'x', claimRef: 7 } },
      {
        metadata: { name: 'd' },
        spec: { csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: H1 }, claimRef: 'x' },
      },
    ];
    const list = harvesterVolumes(hostile);
    assert.equal(list.malformed, 5, 'the name 42, null, "pv", no metadata, null metadata');
    assert.deepEqual(list.volumes, [
      { pv: 'b', hostPvc: H2 },
      { pv: 'd', hostPvc: H1 },
    ]);
  });
});

describe('recording ownership on a host PVC: only what Harvester corroborates (ADR 0021)', () => {
  const volume: GuestVolume = { pv: H1, hostPvc: H1, claim: 'default/data-web-0' };
  const decide = (
    p: PersistentVolumeClaim | undefined,
    cluster = 'harv01',
    v: GuestVolume = volume,
    clusterCreated: string | undefined = BORN,
  ) => decideOwnership({ cluster, volume: v, pvc: p, clusterCreated, now: NOW, path: 'watch' });

  it("labels the cluster's own CSI volume (its shape, made after the cluster, no other claimant) and says why", () => {
    const d = decide(pvc(H1));
    assert.equal(d.action, 'write');
    if (d.action !== 'write') return;
    assert.equal(d.outcome, 'corroborated');
    assert.deepEqual(d.labels, { [LABEL_GUEST_CLUSTER_NAME]: 'harv01' });
    assert.equal(d.annotations[ANNOTATION_GUEST_CLAIMANTS], 'harv01');
    assert.equal(d.annotations[ANNOTATION_GUEST_VOLUME], H1);
    assert.equal(d.annotations[ANNOTATION_GUEST_CLAIM], 'default/data-web-0');
    assert.equal(d.annotations[ANNOTATION_OWNERSHIP_RECORDED], '2026-03-01T10:00:00.000Z watch');
    assert.match(
      d.annotations[ANNOTATION_OWNERSHIP_EVIDENCE] ?? '',
      /^corroborated: .*after guest cluster harv01/,
    );
    // Written once: the same PVC as written is recorded, nothing more to write.
    const after = pvc(H1, { labels: { [LABEL_GUEST_CLUSTER_NAME]: 'harv01' }, annotations: d.annotations });
    assert.deepEqual(decide(after), { action: 'recorded', outcome: 'corroborated', reason: d.reason });
    assert.equal(ownershipBar(after, 'harv01'), undefined);
  });

  const notCorroborated: Array<[string, PersistentVolumeClaim, GuestVolume, RegExp]> = [
    [
      "a Harvester user's standalone volume (any other name)",
      pvc('db-backup'),
      { pv: 'my-pv', hostPvc: 'db-backup' },
      /its name is not one the Harvester CSI driver gives/,
    ],
    [
      'a volume bound statically (the PV is not named as the volume)',
      pvc(H1),
      { pv: 'restored-data', hostPvc: H1 },
      /bound statically/,
    ],
    [
      'a volume made before the guest cluster (restored, or another cluster’s)',
      pvc(H1, { creationTimestamp: '2026-01-15T00:00:00Z' }),
      volume,
      /before the guest cluster/,
    ],
    [
      'a volume made in the same second as the cluster',
      pvc(H1, { creationTimestamp: BORN }),
      volume,
      /before the guest cluster/,
    ],
    [
      'a volume cloned from another',
      pvc(
        H1,
        {},
        { accessModes: ['ReadWriteMany'], dataSource: { kind: 'PersistentVolumeClaim', name: 'x' } },
      ),
      volume,
      /made from another volume/,
    ],
    ['a volume not ReadWriteMany', pvc(H1, {}, { accessModes: ['ReadWriteOnce'] }), volume, /access modes/],
    ['a volume with no creation time', pvc(H1, { creationTimestamp: undefined }), volume, /no creation time/],
  ];
  for (const [what, host, v, why] of notCorroborated)
    it(`does not label ${what}: claimed, not corroborated, listed with why`, () => {
      const d = decide(host, 'harv01', v);
      assert.equal(d.action, 'write');
      if (d.action !== 'write') return;
      assert.equal(d.outcome, 'not corroborated');
      assert.match(d.reason, why);
      assert.deepEqual(d.labels, {});
      assert.equal(d.annotations[ANNOTATION_GUEST_CLAIMANTS], 'harv01');
      const after = pvc(host.metadata.name, { ...host.metadata, annotations: d.annotations }, host.spec);
      assert.match(ownershipBar(after, 'harv01') ?? '', /never deleted automatically/);
    });

  it("does not corroborate without the cluster's creation time", () => {
    const d = decideOwnership({
      cluster: 'harv01',
      volume,
      pvc: pvc(H1),
      clusterCreated: undefined,
      now: NOW,
      path: 'watch',
    });
    assert.equal(d.action === 'write' && d.outcome, 'not corroborated');
  });

  it("a second claimant contests for good: another cluster's label, or one listed before; our label is taken back", () => {
    // Labelled for harv02 (by anyone): harv01 naming it contests it; a label not ours stays.
    const d1 = decide(pvc(H1, { labels: { [LABEL_GUEST_CLUSTER_NAME]: 'harv02' } }));
    assert.equal(d1.action === 'write' && d1.outcome, 'contested');
    if (d1.action !== 'write') return;
    assert.equal(d1.annotations[ANNOTATION_GUEST_CLAIMANTS], 'harv01,harv02');
    assert.deepEqual(d1.labels, {});
    // Recorded by us for harv02 before: the label goes, so no removal of harv02 takes it.
    const ours = pvc(H1, {
      labels: { [LABEL_GUEST_CLUSTER_NAME]: 'harv02' },
      annotations: {
        [ANNOTATION_OWNERSHIP_RECORDED]: '2026-02-01T10:00:00.000Z watch',
        [ANNOTATION_GUEST_CLAIMANTS]: 'harv02',
      },
    });
    const d2 = decide(ours);
    assert.equal(d2.action === 'write' && d2.outcome, 'contested');
    if (d2.action !== 'write') return;
    assert.deepEqual(d2.labels, { [LABEL_GUEST_CLUSTER_NAME]: null });
    // Across restarts and after harv02's PV is gone: the list on the PVC remembers.
    const later = pvc(H1, { annotations: { [ANNOTATION_GUEST_CLAIMANTS]: 'harv01,harv02' } });
    assert.equal(decide(later).action === 'recorded' || decide(later).action === 'write', true);
    const d3 = decide(later);
    assert.equal(d3.action === 'write' || d3.action === 'recorded' ? d3.outcome : '', 'contested');
    assert.match(
      ownershipBar(later, 'harv01') ?? '',
      /named by guest clusters harv01, harv02: ownership contested/,
    );
    // A list that is not what we write counts as contested and is left as it is.
    const garbled = pvc(H1, { annotations: { [ANNOTATION_GUEST_CLAIMANTS]: 'harv01,,Bad Name' } });
    const d4 = decide(garbled);
    assert.equal(d4.action === 'write' && d4.outcome, 'contested');
    if (d4.action === 'write') assert.equal(d4.annotations[ANNOTATION_GUEST_CLAIMANTS], undefined);
  });

  it('takes back a label an earlier controller wrote on the guest’s word alone, and bars it until then', () => {
    const legacy = pvc('db-backup', {
      labels: { [LABEL_GUEST_CLUSTER_NAME]: 'harv01' },
      annotations: {
        [ANNOTATION_GUEST_VOLUME]: 'my-pv',
        [ANNOTATION_OWNERSHIP_RECORDED]: '2026-02-01T10:00:00.000Z watch',
      },
    });
    assert.match(ownershipBar(legacy, 'harv01') ?? '', /earlier controller on the guest's word alone/);
    const d = decide(legacy, 'harv01', { pv: 'my-pv', hostPvc: 'db-backup' });
    assert.equal(d.action === 'write' && d.outcome, 'not corroborated');
    if (d.action === 'write') assert.deepEqual(d.labels, { [LABEL_GUEST_CLUSTER_NAME]: null });
  });

  it('refuses VM disks, owned PVCs and a cluster name that is no label value; reports a missing one', () => {
    assert.equal(
      decide(pvc(H1, { annotations: { 'harvesterhci.io/imageId': 'default/img' } })).action,
      'refused',
    );
    assert.equal(
      decide(pvc(H1, { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u' }] }))
        .action,
      'refused',
    );
    assert.equal(decide(pvc(H1), 'x'.repeat(64)).action, 'refused');
    assert.equal(decide(pvc(H1), '').action, 'refused');
    assert.deepEqual(decide(undefined), { action: 'missing' });
  });

  it('bars nothing it knows nothing of (a volume no controller saw goes as before), and anything not written as we write', () => {
    assert.equal(
      ownershipBar(pvc(H1, { labels: { [LABEL_GUEST_CLUSTER_NAME]: 'harv01' } }), 'harv01'),
      undefined,
    );
    assert.match(
      ownershipBar(
        pvc(H1, { annotations: { [ANNOTATION_OWNERSHIP_EVIDENCE]: 'corroborated\nby me' } }),
        'harv01',
      ) ?? '',
      /not one the controller writes/,
    );
    assert.match(
      ownershipBar(pvc(H1, { annotations: { [ANNOTATION_GUEST_CLAIMANTS]: 'harv02' } }), 'harv01') ?? '',
      /harv01, harv02: ownership contested/,
    );
  });

  it('describes a record for the dry run', () => {
    const d = decide(pvc(H1));
    assert.equal(d.action, 'write');
    if (d.action !== 'write') return;
    assert.equal(
      describeRecord({ metadata: { annotations: d.annotations } }),
      `the guest's PersistentVolume ${H1} (claim default/data-web-0) names it; recorded by harvester-machine-controller at 2026-03-01T10:00:00.000Z by its watch`,
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
