// The deleted cluster's volume cleanup over random worlds: several guest clusters' VMs (some
// being deleted), VM instances with volume statuses, pods, PVCs in two namespaces with labels
// of the cluster, of others, of look-alike values or none, and live clusters' PVs naming some
// of them. Whatever the world, nothing in use, nothing another cluster's PV names, nothing not
// recorded for the cluster and nothing of another namespace is deleted, nothing at all while a
// VM of the cluster is left; and everything else recorded for it is.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decideVolumeCleanup, type VolumeCleanupInput } from './cluster-volume-cleanup.js';
import { LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import type { HostPvc, PodLike } from './orphaned-volumes.js';
import type { VirtualMachine, VirtualMachineInstance } from './types.js';

const NS = 'vms';
const OTHER_NS = 'elsewhere';
const CLUSTER = 'harv01';
const CLAIMS = ['pvc-a', 'pvc-b', 'pvc-c', 'pvc-d', 'pvc-e', 'boot-1', 'boot-2', 'data'];
const CLUSTERS = [CLUSTER, 'harv02', 'harv01-x', 'HARV01', 'harv0', ''];

interface World {
  input: VolumeCleanupInput;
}

const ns = fc.constantFrom(NS, NS, OTHER_NS);
const claim = fc.constantFrom(...CLAIMS);

const pvcArb: fc.Arbitrary<HostPvc> = fc
  .record({
    name: claim,
    namespace: ns,
    label: fc.option(fc.constantFrom(...CLUSTERS), { nil: undefined }),
    deleting: fc.boolean(),
  })
  .map(({ name, namespace, label, deleting }) => ({
    metadata: {
      name,
      namespace,
      uid: `uid-${namespace}-${name}`,
      ...(label === undefined ? {} : { labels: { [LABEL_GUEST_CLUSTER_NAME]: label } }),
      ...(deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}),
    },
    spec: {},
  }));

const vmArb: fc.Arbitrary<VirtualMachine> = fc
  .record({
    name: fc.constantFrom('vm-1', 'vm-2', 'vm-3'),
    namespace: ns,
    cluster: fc.option(fc.constantFrom(...CLUSTERS), { nil: undefined }),
    claims: fc.uniqueArray(claim, { maxLength: 3 }),
    templates: fc.uniqueArray(claim, { maxLength: 1 }),
    dataVolume: fc.option(claim, { nil: undefined }),
    deleting: fc.boolean(),
  })
  .map((v) => ({
    apiVersion: 'kubevirt.io/v1' as const,
    kind: 'VirtualMachine' as const,
    metadata: {
      name: v.name,
      namespace: v.namespace,
      ...(v.cluster === undefined ? {} : { labels: { [LABEL_GUEST_CLUSTER_NAME]: v.cluster } }),
      ...(v.templates.length
        ? {
            annotations: {
              'harvesterhci.io/volumeClaimTemplates': JSON.stringify(
                v.templates.map((t) => ({ metadata: { name: t } })),
              ),
            },
          }
        : {}),
      ...(v.deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}),
    },
    spec: {
      template: {
        spec: {
          domain: { devices: {} },
          volumes: [
            ...v.claims.map((c, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName: c } })),
            ...(v.dataVolume ? [{ name: 'dv', dataVolume: { name: v.dataVolume } }] : []),
          ],
        },
      },
    },
  }));

const vmiArb: fc.Arbitrary<VirtualMachineInstance> = fc
  .record({
    namespace: ns,
    specClaim: fc.option(claim, { nil: undefined }),
    statusClaim: fc.option(claim, { nil: undefined }),
  })
  .map((v) => ({
    metadata: { name: 'vmi', namespace: v.namespace },
    spec: {
      domain: { devices: {} },
      volumes: v.specClaim ? [{ name: 's', persistentVolumeClaim: { claimName: v.specClaim } }] : [],
    },
    status: {
      volumeStatus: v.statusClaim
        ? [{ name: 'hp', persistentVolumeClaimInfo: { claimName: v.statusClaim }, hotplugVolume: {} }]
        : [],
    },
  }));

const podArb: fc.Arbitrary<PodLike> = fc
  .record({ namespace: ns, claims: fc.uniqueArray(claim, { maxLength: 2 }) })
  .map((p) => ({
    metadata: { name: 'pod', namespace: p.namespace },
    spec: { volumes: p.claims.map((c) => ({ persistentVolumeClaim: { claimName: c } })) },
  }));

const worldArb: fc.Arbitrary<World> = fc
  .record({
    pvcs: fc.array(pvcArb, { maxLength: 12 }),
    vms: fc.array(vmArb, { maxLength: 5 }),
    vmis: fc.array(vmiArb, { maxLength: 3 }),
    pods: fc.option(fc.array(podArb, { maxLength: 3 }), { nil: undefined, freq: 8 }),
    live: fc.uniqueArray(claim, { maxLength: 3 }),
    cluster: fc.constantFrom(CLUSTER, CLUSTER, ''),
  })
  .map((w) => ({
    input: {
      cluster: w.cluster,
      namespace: NS,
      pvcs: w.pvcs,
      vms: w.vms,
      vmis: w.vmis,
      pods: w.pods,
      liveClaims: new Map(w.live.map((c) => [c, [`PersistentVolume ${c} of guest cluster harv02`]])),
    },
  }));

/** Every claim something uses in the namespace, computed here apart from the implementation. */
function used(input: VolumeCleanupInput): Set<string> {
  const out = new Set<string>();
  const inNs = <T extends { metadata: { namespace?: string } }>(xs: readonly T[]): T[] =>
    xs.filter((x) => x.metadata.namespace === NS);
  for (const vm of inNs(input.vms)) {
    for (const v of vm.spec.template.spec.volumes ?? [])
      for (const c of [v.persistentVolumeClaim?.claimName, v.dataVolume?.name]) if (c) out.add(c);
    const templates = vm.metadata.annotations?.['harvesterhci.io/volumeClaimTemplates'] ?? '[]';
    for (const t of JSON.parse(templates) as Array<{ metadata: { name: string } }>) out.add(t.metadata.name);
  }
  for (const vmi of inNs(input.vmis)) {
    const claims = [
      ...(vmi.spec?.volumes ?? []).map((v) => v.persistentVolumeClaim?.claimName),
      ...(vmi.status?.volumeStatus ?? []).map((s) => s.persistentVolumeClaimInfo?.claimName),
    ];
    for (const c of claims) if (c) out.add(c);
  }
  for (const pod of inNs(input.pods ?? []))
    for (const v of pod.spec?.volumes ?? [])
      if (v.persistentVolumeClaim?.claimName) out.add(v.persistentVolumeClaim.claimName);
  return out;
}

const PROPERTY_RUNS = 2000;

describe('deleted cluster volume cleanup: safety over random worlds', () => {
  it('deletes only unused, unclaimed PVCs of the namespace recorded for the cluster, and only once no VM of it is left', () => {
    fc.assert(
      fc.property(worldArb, ({ input }) => {
        const decision = decideVolumeCleanup(input);
        const vmLeft = input.vms.some(
          (v) =>
            v.metadata.namespace === NS && v.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === input.cluster,
        );
        if (decision.action !== 'delete') {
          assert.ok(
            vmLeft || input.pods === undefined || input.cluster === '',
            `${decision.action}: ${decision.reason}`,
          );
          return;
        }
        assert.ok(!vmLeft && input.pods !== undefined && input.cluster !== '');
        const inUse = used(input);
        for (const v of decision.volumes) {
          const matches = input.pvcs.filter((p) => p.metadata.name === v.name && p.metadata.uid === v.uid);
          assert.ok(matches.length > 0, `${v.name} is a listed PVC`);
          for (const p of input.pvcs.filter(
            (q) => q.metadata.name === v.name && q.metadata.namespace === NS,
          )) {
            assert.equal(p.metadata.namespace, NS, `${v.name} is of the VMs' namespace`);
            assert.equal(
              p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME],
              CLUSTER,
              `${v.name} is recorded for the cluster`,
            );
            assert.equal(p.metadata.deletionTimestamp, undefined);
          }
          assert.ok(!inUse.has(v.name), `${v.name} is used by nothing`);
          assert.ok(!input.liveClaims.has(v.name), `${v.name} is named by no live cluster's PV`);
        }
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });

  it('leaves nothing recorded for the cluster that may go', () => {
    fc.assert(
      fc.property(worldArb, ({ input }) => {
        const decision = decideVolumeCleanup(input);
        if (decision.action !== 'delete') return;
        const inUse = used(input);
        const recorded = (p: HostPvc): boolean =>
          p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === CLUSTER && !p.metadata.deletionTimestamp;
        for (const p of input.pvcs) {
          // A name listed twice goes only when every entry of it is recorded for the cluster.
          const entries = input.pvcs.filter(
            (q) => q.metadata.namespace === NS && q.metadata.name === p.metadata.name,
          );
          const mayGo =
            p.metadata.namespace === NS &&
            entries.every(recorded) &&
            !inUse.has(p.metadata.name) &&
            !input.liveClaims.has(p.metadata.name);
          if (mayGo)
            assert.ok(
              decision.volumes.some((v) => v.name === p.metadata.name),
              `${p.metadata.name} goes`,
            );
        }
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });
});

describe('deleted cluster volume cleanup: the reasons', () => {
  const pvc = (name: string, label?: string): HostPvc => ({
    metadata: {
      name,
      namespace: NS,
      uid: `u-${name}`,
      ...(label ? { labels: { [LABEL_GUEST_CLUSTER_NAME]: label } } : {}),
    },
    spec: {},
  });
  const base: VolumeCleanupInput = {
    cluster: CLUSTER,
    namespace: NS,
    pvcs: [pvc('pvc-a', CLUSTER), pvc('pvc-b', CLUSTER), pvc('pvc-c', 'harv02'), pvc('pvc-d')],
    vms: [],
    vmis: [],
    pods: [
      {
        metadata: { name: 'virt-launcher-x', namespace: NS },
        spec: { volumes: [{ persistentVolumeClaim: { claimName: 'pvc-b' } }] },
      },
    ],
    liveClaims: new Map(),
  };

  it('waits while a VM of the cluster is left, naming it', () => {
    const vm: VirtualMachine = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'harv01-pool1-x', namespace: NS, labels: { [LABEL_GUEST_CLUSTER_NAME]: CLUSTER } },
      spec: { template: { spec: { domain: { devices: {} } } } },
    };
    const d = decideVolumeCleanup({ ...base, vms: [vm] });
    assert.deepEqual(d, {
      action: 'wait',
      reason: '1 VM(s) of guest cluster harv01 are left in vms (harv01-pool1-x)',
    });
  });

  it('deletes the recorded, unused one; keeps the one a pod uses and says why', () => {
    const d = decideVolumeCleanup(base);
    assert.equal(d.action, 'delete');
    if (d.action !== 'delete') return;
    assert.deepEqual(
      d.volumes.map((v) => v.name),
      ['pvc-a'],
    );
    assert.match(d.volumes[0]?.reason ?? '', /recorded for guest cluster harv01/);
    assert.deepEqual(d.kept, [
      { name: 'pvc-b', uid: 'u-pvc-b', reason: 'still used by pod vms/virt-launcher-x' },
    ]);
  });

  it("keeps what a live cluster's PV names, whatever its label", () => {
    const d = decideVolumeCleanup({
      ...base,
      liveClaims: new Map([['pvc-a', ['PersistentVolume pvc-a of guest cluster harv02']]]),
    });
    assert.equal(d.action, 'delete');
    if (d.action !== 'delete') return;
    assert.deepEqual(d.volumes, []);
    assert.match(
      d.kept.find((k) => k.name === 'pvc-a')?.reason ?? '',
      /named by PersistentVolume pvc-a of guest cluster harv02/,
    );
  });

  it('keeps what another cluster ever named, what was not corroborated, and an old record on the guest’s word alone (ADR 0021)', () => {
    const annotated = (annotations: Record<string, string>): HostPvc => {
      const p = pvc('pvc-a', CLUSTER);
      p.metadata.annotations = annotations;
      return p;
    };
    for (const [annotations, why] of [
      [{ 'harvester-machine.io/guest-claimants': 'harv01,harv02' }, /harv01, harv02: ownership contested/],
      [
        { 'harvester-machine.io/guest-claimants': 'x,' },
        /guest-claimants annotation is not one the controller writes/,
      ],
      [
        {
          'harvester-machine.io/ownership-evidence':
            'not corroborated: its name is not one the CSI driver gives',
        },
        /^ownership not corroborated: its name/,
      ],
      [{ 'harvester-machine.io/guest-volume': 'my-pv' }, /earlier controller on the guest's word alone/],
    ] as const) {
      const d = decideVolumeCleanup({ ...base, pvcs: [annotated(annotations), pvc('pvc-d')] });
      assert.equal(d.action, 'delete');
      if (d.action !== 'delete') return;
      assert.deepEqual(d.volumes, []);
      assert.match(d.kept[0]?.reason ?? '', why);
      assert.match(d.kept[0]?.reason ?? '', /never deleted automatically: delete it by hand/);
    }
    // Corroborated, and named by this cluster alone: it goes.
    const own = decideVolumeCleanup({
      ...base,
      pvcs: [
        annotated({
          'harvester-machine.io/guest-claimants': CLUSTER,
          'harvester-machine.io/ownership-evidence': 'corroborated: named as the CSI driver names it',
          'harvester-machine.io/guest-volume': 'pvc-a',
        }),
      ],
    });
    assert.deepEqual(own.action === 'delete' && own.volumes.map((v) => v.name), ['pvc-a']);
  });

  it('deletes nothing when pods could not be listed, or for a cluster without a name', () => {
    assert.equal(decideVolumeCleanup({ ...base, pods: undefined }).action, 'refuse');
    assert.equal(decideVolumeCleanup({ ...base, cluster: '' }).action, 'refuse');
  });
});
