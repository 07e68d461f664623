// Ownership from a hostile guest over random worlds: Harvester's namespace holds guest
// cluster A's CSI volumes, guest cluster B's (B made before or after A), and Harvester users'
// standalone volumes, some bound statically in B. B's admin is honest; A's answers anything: PVs
// naming B's volumes or standalone ones (with a PV named as the volume, to pass for a provisioned
// one), the same handle many times, huge names and handles, entries that are no PV at all. The
// controller records both clusters (in either order, as their watches see them), then A is
// deleted: the controller's cleanup and the driver's whole-cluster removal of A's VM (which may
// have anything hot-plugged) decide. Whatever A answered: nothing throws, no volume of B and no
// standalone volume is deleted; A's own volumes, which its PVs name as provisioned, still go.
// (A volume no guest ever named but hot-plugged into A's VM goes with A's whole-cluster removal,
// as the Go driver's rule has it: that is Harvester's VM spec, not a guest's PV.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { PersistentVolume } from '../api/core.js';
import { decideVolumeCleanup } from './cluster-volume-cleanup.js';
import { decideOwnership, harvesterVolumes, HARVESTER_CSI_DRIVER } from './guest-volumes.js';
import { LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import { planRemoval } from './removal-plan.js';
import type { PersistentVolumeClaim, VirtualMachine } from './types.js';

const NS = 'vms';
const A = 'harv-a';
const B = 'harv-b';
const BASE = Date.parse('2026-01-01T00:00:00Z');
const at = (minutes: number): string => new Date(BASE + minutes * 60_000).toISOString();
const A_BORN = 1_000;

type Kind = 'own' | 'foreign' | 'standalone';
interface HostVolume {
  name: string;
  kind: Kind;
  created: number;
}

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
const csiName = fc.tuple(hex(8), hex(4), hex(4), hex(4), hex(12)).map((p) => `pvc-${p.join('-')}`);
const STANDALONE = ['db-backup', 'restored-data', 'iso-store', 'shared.scratch', 'vm-data-1'];

interface World {
  bBorn: number;
  volumes: HostVolume[];
  /** B's PVs: its own volumes as provisioned, standalone ones bound statically. */
  bPvs: PersistentVolume[];
  aPvs: unknown[];
  bFirst: boolean;
  bLive: boolean;
  hotplugged: string[];
}

const pv = (name: unknown, handle: unknown, claimRef?: unknown): unknown => ({
  metadata: { name },
  spec: { csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: handle }, ...(claimRef ? { claimRef } : {}) },
});

const worldArb: fc.Arbitrary<World> = fc
  .record({
    bBorn: fc.integer({ min: 0, max: 2_000 }),
    csiNames: fc.uniqueArray(csiName, { minLength: 2, maxLength: 6 }),
    ownCount: fc.integer({ min: 1, max: 3 }),
    ownAge: fc.array(fc.integer({ min: 1, max: 500 }), { minLength: 6, maxLength: 6 }),
    foreignAge: fc.array(fc.integer({ min: 1, max: 500 }), { minLength: 6, maxLength: 6 }),
    standalone: fc.uniqueArray(fc.constantFrom(...STANDALONE), { maxLength: 3 }),
    standaloneAt: fc.array(fc.integer({ min: 0, max: 3_000 }), { minLength: 5, maxLength: 5 }),
    bindsStatic: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
    bFirst: fc.boolean(),
    bLive: fc.boolean(),
    seed: fc.integer(),
  })
  .map(({ csiNames, ownCount, ...r }) => {
    const own = csiNames.slice(0, Math.min(ownCount, csiNames.length - 1));
    return { ...r, own, foreign: csiNames.slice(own.length) };
  })
  .chain((r) => {
    const volumes: HostVolume[] = [
      ...r.own.map((name, i) => ({ name, kind: 'own' as const, created: A_BORN + (r.ownAge[i] ?? 1) })),
      ...r.foreign.map((name, i) => ({
        name,
        kind: 'foreign' as const,
        created: r.bBorn + (r.foreignAge[i] ?? 1),
      })),
      ...r.standalone.map((name, i) => ({
        name,
        kind: 'standalone' as const,
        created: r.standaloneAt[i] ?? 0,
      })),
    ];
    const bPvs = [
      ...r.foreign.map((h) => pv(h, h, { namespace: 'default', name: `data-${h.slice(4, 9)}` })),
      ...r.standalone
        .filter((_, i) => r.bindsStatic[i])
        .map((h) => pv(`static-${h}`, h, { namespace: 'default', name: 'restored' })),
    ] as PersistentVolume[];
    const names = volumes.map((v) => v.name);
    const handle = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...names) },
      { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
      { weight: 1, arbitrary: fc.constant('a'.repeat(300)) },
      { weight: 1, arbitrary: fc.anything() },
    );
    const aPv = fc.oneof(
      // Named as the volume, to pass for a provisioned one.
      { weight: 4, arbitrary: handle.map((h) => pv(h, h, { namespace: 'default', name: 'x' })) },
      { weight: 2, arbitrary: fc.tuple(fc.string({ maxLength: 30 }), handle).map(([n, h]) => pv(n, h)) },
      { weight: 1, arbitrary: handle.map((h) => pv('z'.repeat(10_000), h)) },
      {
        weight: 1,
        arbitrary: fc.tuple(fc.anything(), handle, fc.anything()).map(([n, h, c]) => pv(n, h, c)),
      },
      { weight: 1, arbitrary: fc.anything() },
    );
    return fc
      .record({
        aPvs: fc.array(aPv, { maxLength: 25 }).map((list) => [
          // A's own volumes, as its CSI driver provisioned them.
          ...r.own.map((h) => pv(h, h, { namespace: 'default', name: `data-${h.slice(4, 9)}` })),
          ...list,
        ]),
        hotplugged: fc.subarray(names),
      })
      .map(({ aPvs, hotplugged }) => ({
        bBorn: r.bBorn,
        volumes,
        bPvs,
        aPvs,
        bFirst: r.bFirst,
        bLive: r.bLive,
        hotplugged,
      }));
  });

/** Harvester's PVCs, as the CSI driver and Harvester users made them. */
function harvester(w: World): Map<string, PersistentVolumeClaim> {
  return new Map(
    w.volumes.map((v) => [
      v.name,
      {
        metadata: { name: v.name, namespace: NS, uid: `uid-${v.name}`, creationTimestamp: at(v.created) },
        spec: { accessModes: ['ReadWriteMany'], volumeMode: 'Block' },
      },
    ]),
  );
}

/** One cluster's record pass, writes applied as the merge patch would. */
function record(
  pvcs: Map<string, PersistentVolumeClaim>,
  cluster: string,
  born: number,
  pvs: unknown[],
): void {
  for (const volume of harvesterVolumes(pvs).volumes) {
    const pvc = pvcs.get(volume.hostPvc);
    const d = decideOwnership({
      cluster,
      volume,
      pvc,
      clusterCreated: at(born),
      now: new Date(BASE),
      path: 'watch',
    });
    if (d.action !== 'write' || !pvc) continue;
    const labels = { ...(pvc.metadata.labels ?? {}) };
    for (const [k, v] of Object.entries(d.labels)) {
      if (v === null) delete labels[k];
      else labels[k] = v;
    }
    pvc.metadata.labels = labels;
    pvc.metadata.annotations = { ...(pvc.metadata.annotations ?? {}), ...d.annotations };
  }
}

function vmOfA(hotplugged: string[]): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name: 'harv-a-pool1-x',
      namespace: NS,
      uid: 'uid-vm',
      labels: { [LABEL_GUEST_CLUSTER_NAME]: A },
      annotations: { 'harvesterhci.io/removeAllPersistentVolumeClaims': 'true' },
    },
    spec: {
      template: {
        spec: {
          domain: { devices: {} },
          volumes: hotplugged.map((h, i) => ({
            name: `hp${i}`,
            persistentVolumeClaim: { claimName: h, hotpluggable: true },
          })),
        },
      },
    },
  };
}

describe('ownership from a hostile guest: what Harvester corroborates, never its word alone', () => {
  it("never makes B's or a standalone volume deletable with A; A's own provisioned volumes still go; nothing throws", () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const pvcs = harvester(w);
        const recordB = () => record(pvcs, B, w.bBorn, w.bPvs);
        if (w.bFirst) recordB();
        record(pvcs, A, A_BORN, w.aPvs);
        if (!w.bFirst) recordB();

        const all = [...pvcs.values()];
        const liveClaims = new Map<string, string[]>();
        if (w.bLive)
          for (const v of harvesterVolumes(w.bPvs).volumes)
            liveClaims.set(v.hostPvc, [`PersistentVolume ${v.pv}`]);
        const cleanup = decideVolumeCleanup({
          cluster: A,
          namespace: NS,
          pvcs: all.filter((p) => p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === A),
          vms: [],
          vmis: [],
          pods: [],
          liveClaims,
        });
        assert.equal(cleanup.action, 'delete');
        const vm = vmOfA(w.hotplugged);
        const plan = planRemoval({
          vm,
          pvcs: all.filter(
            (p) =>
              p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === A || w.hotplugged.includes(p.metadata.name),
          ),
          vms: [vm],
          removeAll: true,
          clusterName: A,
        });
        const deleted = new Set([
          ...(cleanup.action === 'delete' ? cleanup.volumes.map((v) => v.name) : []),
          ...plan.pvcs.map((p) => p.name),
        ]);
        // Hot-plugged into A's VM and named by no guest: the Go driver's rule (a whole-cluster
        // removal takes the VM's hot-plugged volumes) is kept; no guest's word is involved.
        const namedByNone = (name: string) =>
          pvcs.get(name)?.metadata.annotations?.['harvester-machine.io/guest-claimants'] === undefined;
        for (const v of w.volumes) {
          if (v.kind !== 'own' && !(w.hotplugged.includes(v.name) && namedByNone(v.name)))
            assert.ok(!deleted.has(v.name), `${v.kind} volume ${v.name} deleted with ${A}`);
          else if (v.kind !== 'own') continue;
          else if (!w.hotplugged.includes(v.name))
            // Not hot-plugged, named as provisioned by A alone: recorded, and it goes.
            assert.ok(
              cleanup.action === 'delete' && cleanup.volumes.some((x) => x.name === v.name),
              `A's own volume ${v.name} kept: ${JSON.stringify(cleanup)}`,
            );
        }
        // No label of A on anything not A's, whatever order the records came in.
        for (const v of w.volumes)
          if (v.kind !== 'own')
            assert.notEqual(pvcs.get(v.name)?.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME], A);
      }),
      { numRuns: 400 },
    );
  });

  it('never throws on any list a guest answers, and keeps only what can be a PVC name', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.anything(), fc.record({ metadata: fc.anything(), spec: fc.anything() }))),
        (pvs) => {
          const list = harvesterVolumes(pvs);
          for (const v of list.volumes) {
            assert.equal(typeof v.pv, 'string');
            assert.match(v.hostPvc, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
          }
          assert.ok(list.malformed <= pvs.length);
        },
      ),
    );
  });
});
