import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  planRemoval,
  removedPvcsAnnotationValue,
  wantsRemoveAllPvcs,
  type RemovalInputs,
} from './removal-plan.js';
import { pvc, pvcVolume, vmiWith, vmWith } from './testing/fixtures.js';
import type {
  PersistentVolumeClaim,
  Secret,
  VirtualMachine,
  VirtualMachineInstance,
  Volume,
} from './types.js';

const CLUSTER_LABEL = 'guestcluster.harvesterhci.io/name';
const names = (items: Array<{ name: string }>): string[] => items.map((i) => i.name);

describe('planRemoval: examples', () => {
  const vm = vmWith('c1-pool-abc-x1', 'default', [
    { name: 'cloudinitdisk', cloudInitNoCloud: { secretRef: { name: 'c1-pool-abc-x1-cloudinit' } } },
    pvcVolume('disk-0', 'c1-pool-abc-x1-disk-0-aaaaa'),
    pvcVolume('disk-1', 'c1-pool-abc-x1-disk-1-bbbbb'),
    pvcVolume('pvc-guest-1', 'pvc-guest-1', true),
  ]);
  const pvcs = [
    pvc('c1-pool-abc-x1-disk-0-aaaaa', 'default'),
    pvc('c1-pool-abc-x1-disk-1-bbbbb', 'default'),
    pvc('pvc-guest-1', 'default', { [CLUSTER_LABEL]: 'c1' }),
    pvc('pvc-guest-2', 'default', { [CLUSTER_LABEL]: 'c1' }),
    pvc('pvc-guest-3', 'default', { [CLUSTER_LABEL]: 'c1' }),
    pvc('pvc-other-cluster', 'default', { [CLUSTER_LABEL]: 'c2' }),
    pvc('pvc-guest-9', 'elsewhere', { [CLUSTER_LABEL]: 'c1' }),
  ];
  const otherVm = vmWith('c1-pool-abc-x2', 'default', [pvcVolume('pvc-guest-3', 'pvc-guest-3', true)]);
  const base: RemovalInputs = {
    vm,
    pvcs: pvcs,
    vms: [vm, otherVm],
    removeAll: false,
    clusterName: 'c1',
  };

  it('plain removal: boot and data disks go, hot-plugged workload volumes stay', () => {
    const plan = planRemoval(base);
    assert.deepEqual(names(plan.pvcs), ['c1-pool-abc-x1-disk-0-aaaaa', 'c1-pool-abc-x1-disk-1-bbbbb']);
    assert.deepEqual(names(plan.kept), ['pvc-guest-1']);
    assert.match(plan.kept[0]?.reason ?? '', /hot-plugged volume .* kept when only this machine is removed/);
    assert.match(plan.pvcs[0]?.reason ?? '', /boot\/data disk disk-0 of VM default\/c1-pool-abc-x1/);
    assert.equal(removedPvcsAnnotationValue(plan), 'c1-pool-abc-x1-disk-0-aaaaa,c1-pool-abc-x1-disk-1-bbbbb');
    assert.deepEqual(plan.secrets, [
      {
        name: 'c1-pool-abc-x1-cloudinit',
        reason:
          'cloud-init Secret owned by VM default/c1-pool-abc-x1; the garbage collector deletes it with the VM',
      },
    ]);
  });

  it('whole cluster: hot-plugged and labelled PVCs too, never another namespace, cluster or VM’s', () => {
    const plan = planRemoval({ ...base, removeAll: true });
    assert.deepEqual(names(plan.pvcs), [
      'c1-pool-abc-x1-disk-0-aaaaa',
      'c1-pool-abc-x1-disk-1-bbbbb',
      'pvc-guest-1',
      'pvc-guest-2',
    ]);
    assert.deepEqual(
      plan.kept.map((k) => [k.name, k.reason]),
      [
        ['pvc-guest-3', 'still used by VM default/c1-pool-abc-x2'],
        ['elsewhere/pvc-guest-9', "in namespace elsewhere, not the VM's namespace default"],
      ],
    );
    assert.match(
      plan.pvcs[3]?.reason ?? '',
      /labelled guestcluster\.harvesterhci\.io\/name=c1; the whole guest cluster/,
    );
  });

  it('whole cluster: a volume the cleanup controller recorded says which guest volume it is', () => {
    const recorded = pvc('pvc-guest-2', 'default', { [CLUSTER_LABEL]: 'c1' });
    recorded.metadata.annotations = {
      'harvester-machine.io/guest-volume': 'pvc-guest-2',
      'harvester-machine.io/guest-claim': 'default/data-db-0',
      'harvester-machine.io/ownership-recorded': '2026-03-01T10:00:00.000Z watch',
      'harvester-machine.io/guest-claimants': 'c1',
      'harvester-machine.io/ownership-evidence': 'corroborated: named as the Harvester CSI driver names it',
    };
    const plan = planRemoval({
      ...base,
      removeAll: true,
      pvcs: pvcs.map((p) => (p.metadata.name === 'pvc-guest-2' ? recorded : p)),
    });
    assert.equal(
      plan.pvcs.find((p) => p.name === 'pvc-guest-2')?.reason,
      "labelled guestcluster.harvesterhci.io/name=c1 (the guest's PersistentVolume pvc-guest-2 (claim default/data-db-0) names it; recorded by harvester-machine-controller at 2026-03-01T10:00:00.000Z by its watch); the whole guest cluster is being deleted",
    );
  });

  it('whole cluster: keeps a labelled or hot-plugged volume whose ownership Harvester does not show as the cluster’s alone (ADR 0021)', () => {
    const shown = (annotations: Record<string, string>, labelled = true) => {
      const p = pvc('pvc-guest-2', 'default', labelled ? { [CLUSTER_LABEL]: 'c1' } : {});
      p.metadata.annotations = annotations;
      const plan = planRemoval({
        ...base,
        removeAll: true,
        pvcs: pvcs.map((x) => (x.metadata.name === 'pvc-guest-2' ? p : x)),
      });
      assert.equal(
        plan.pvcs.find((x) => x.name === 'pvc-guest-2'),
        undefined,
      );
      return plan.kept.find((x) => x.name === 'pvc-guest-2')?.reason ?? '';
    };
    // Two clusters named it, ever: kept, whatever its label says.
    assert.match(
      shown({ 'harvester-machine.io/guest-claimants': 'c1,c2' }),
      /^named by guest clusters c1, c2: ownership contested; never deleted automatically/,
    );
    // Recorded for another cluster, and labelled for this one by someone else.
    assert.match(shown({ 'harvester-machine.io/guest-claimants': 'c2' }), /c1, c2: ownership contested/);
    // A record by an earlier controller, on the guest's word alone.
    assert.match(
      shown({
        'harvester-machine.io/guest-volume': 'pvc-guest-2',
        'harvester-machine.io/ownership-recorded': '2026-03-01T10:00:00.000Z watch',
      }),
      /earlier controller on the guest's word alone/,
    );
    // A hot-plugged volume of the VM that two clusters named stays too.
    const hot = pvc('pvc-guest-1', 'default', {});
    hot.metadata.annotations = { 'harvester-machine.io/guest-claimants': 'c1,c2' };
    const hotPlan = planRemoval({
      ...base,
      removeAll: true,
      pvcs: pvcs.map((x) => (x.metadata.name === 'pvc-guest-1' ? hot : x)),
    });
    assert.equal(
      hotPlan.pvcs.find((x) => x.name === 'pvc-guest-1'),
      undefined,
    );
    assert.match(
      hotPlan.kept.find((x) => x.name === 'pvc-guest-1')?.reason ?? '',
      /c1, c2: ownership contested/,
    );
    // Not corroborated.
    assert.match(
      shown({
        'harvester-machine.io/guest-claimants': 'c1',
        'harvester-machine.io/ownership-evidence': 'not corroborated: bound statically',
      }),
      /^ownership not corroborated: bound statically; never deleted automatically/,
    );
  });

  it('keeps a volume of the VM that is labelled for another guest cluster', () => {
    const odd = vmWith('vm1', 'default', [pvcVolume('disk-0', 'shared-disk')]);
    const plan = planRemoval({
      vm: odd,
      pvcs: [pvc('shared-disk', 'default', { [CLUSTER_LABEL]: 'c2' })],
      vms: [odd],
      removeAll: true,
      clusterName: 'c1',
    });
    assert.deepEqual(plan.pvcs, []);
    assert.deepEqual(plan.kept, [
      { name: 'shared-disk', reason: 'labelled for guest cluster "c2", not "c1"' },
    ]);
  });

  it('takes hot-plug state from the VMI too (spec volumes, volumeStatus)', () => {
    const vm2 = vmWith('vm2', 'default', [pvcVolume('disk-0', 'boot'), pvcVolume('data', 'data-pvc')]);
    const vmi = vmiWith(
      'vm2',
      'default',
      { phase: 'Running', volumeStatus: [{ name: 'data', hotplugVolume: { attachPodName: 'hp-1' } }] },
      [pvcVolume('extra', 'vmi-only-pvc', true)],
    );
    const pvcs = ['boot', 'data-pvc', 'vmi-only-pvc'].map((n) => pvc(n, 'default'));
    const plan = planRemoval({
      vm: vm2,
      vmi,
      pvcs: pvcs,
      vms: [],
      removeAll: false,
      clusterName: '',
    });
    assert.deepEqual(names(plan.pvcs), ['boot']);
    assert.deepEqual(names(plan.kept), ['data-pvc', 'vmi-only-pvc']);
    const all = planRemoval({
      vm: vm2,
      vmi,
      pvcs: pvcs,
      vms: [],
      removeAll: true,
      clusterName: '',
    });
    assert.deepEqual(names(all.pvcs), ['boot', 'data-pvc', 'vmi-only-pvc']);
  });

  it('selects nothing by label when the machine has no cluster name', () => {
    const plan = planRemoval({
      ...base,
      removeAll: true,
      clusterName: '',
      pvcs: [pvc('x', 'default', { [CLUSTER_LABEL]: '' })],
    });
    assert.ok(!names(plan.pvcs).includes('x'));
  });

  it('keeps a volume Harvester refuses to delete, its words quoted, escaped and cut; a yes plans it', () => {
    const hostile = `attached to VM: default/rescue\n\u001b[2Jrm -rf / ${'x'.repeat(400)}`;
    const plan = planRemoval({
      ...base,
      removeAll: true,
      harvesterAnswers: new Map([
        ['pvc-guest-2', { kind: 'refused', reason: hostile }],
        ['pvc-guest-1', { kind: 'allowed' }],
      ]),
    });
    assert.ok(names(plan.pvcs).includes('pvc-guest-1'));
    assert.ok(!names(plan.pvcs).includes('pvc-guest-2'));
    const reason = plan.kept.find((k) => k.name === 'pvc-guest-2')?.reason ?? '';
    assert.match(
      reason,
      /^Harvester refuses to delete it: "attached to VM: default\/rescue\\n\\u001b\[2Jrm -rf \/ x+…" \(4\d\d characters\)$/,
    );
    assert.ok(![...reason].some((c) => c.charCodeAt(0) < 0x20), 'no control character reaches the reason');
    assert.ok(reason.length < 330);
  });

  it('protects PVCs another VM uses through a DataVolume', () => {
    const user = vmWith('other', 'default', [
      { name: 'dv', dataVolume: { name: 'c1-pool-abc-x1-disk-1-bbbbb' } },
    ]);
    const plan = planRemoval({ ...base, vms: [vm, user] });
    assert.deepEqual(names(plan.pvcs), ['c1-pool-abc-x1-disk-0-aaaaa']);
    assert.equal(
      plan.kept.find((k) => k.name === 'c1-pool-abc-x1-disk-1-bbbbb')?.reason,
      'still used by VM default/other',
    );
  });

  it('lists only Secrets the VM owns when the namespace’s Secrets are known', () => {
    const secret = (owner?: string): Secret => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'c1-pool-abc-x1-cloudinit',
        namespace: 'default',
        ...(owner
          ? {
              ownerReferences: [
                { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: 'c1-pool-abc-x1', uid: owner },
              ],
            }
          : {}),
      },
    });
    assert.equal(planRemoval({ ...base, secretsInNamespace: [secret(vm.metadata.uid)] }).secrets.length, 1);
    assert.equal(planRemoval({ ...base, secretsInNamespace: [secret('someone-else')] }).secrets.length, 0);
    assert.equal(planRemoval({ ...base, secretsInNamespace: [secret()] }).secrets.length, 0);
  });

  it('reads Rancher’s annotation exactly as the Go driver does', () => {
    const annotated = (value: string): VirtualMachine =>
      vmWith('v', 'default', [], { 'harvesterhci.io/removeAllPersistentVolumeClaims': value });
    assert.equal(wantsRemoveAllPvcs(annotated('true')), true);
    assert.equal(wantsRemoveAllPvcs(annotated('True')), false);
    assert.equal(wantsRemoveAllPvcs(vmWith('v', 'default', [])), false);
  });
});

// ---- property tests ----

const NAMESPACES = ['ns-a', 'ns-b'];
const PVC_NAMES = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'];
const CLUSTERS = ['c1', 'c2', ''];

const volumeArb: fc.Arbitrary<Volume> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .record({ claim: fc.constantFrom(...PVC_NAMES), hot: fc.boolean() })
      .map(({ claim, hot }) => pvcVolume(`vol-${claim}`, claim, hot)),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(...PVC_NAMES)
      .map((claim): Volume => ({ name: `dv-${claim}`, dataVolume: { name: claim } })),
  },
);

const pvcArb: fc.Arbitrary<PersistentVolumeClaim> = fc
  .record({
    name: fc.constantFrom(...PVC_NAMES),
    namespace: fc.constantFrom(...NAMESPACES),
    cluster: fc.option(fc.constantFrom(...CLUSTERS), { nil: undefined }),
  })
  .map(({ name, namespace, cluster }) =>
    pvc(name, namespace, cluster === undefined ? undefined : { [CLUSTER_LABEL]: cluster }),
  );

const otherVmArb: fc.Arbitrary<VirtualMachine> = fc
  .record({
    name: fc.constantFrom('vm-0', 'vm-1', 'vm-2', 'vm-3'),
    namespace: fc.constantFrom(...NAMESPACES),
    volumes: fc.array(volumeArb, { maxLength: 3 }),
  })
  .map(({ name, namespace, volumes }) => vmWith(name, namespace, volumes));

const vmiArb = (volumes: Volume[]): fc.Arbitrary<VirtualMachineInstance | undefined> =>
  fc.option(
    fc
      .record({
        extra: fc.array(volumeArb, { maxLength: 2 }),
        hotStatus: fc.subarray(
          [...volumes, ...PVC_NAMES.map((c) => pvcVolume(`vol-${c}`, c))].map((v) => v.name),
        ),
      })
      .map(({ extra, hotStatus }) =>
        vmiWith(
          'vm-0',
          'ns-a',
          { phase: 'Running', volumeStatus: hotStatus.map((name) => ({ name, hotplugVolume: {} })) },
          extra,
        ),
      ),
    { nil: undefined },
  );

const inputsArb: fc.Arbitrary<RemovalInputs> = fc
  .array(volumeArb, { maxLength: 5 })
  .chain((volumes) =>
    fc.record({
      vm: fc.constant(vmWith('vm-0', 'ns-a', volumes)),
      vmi: vmiArb(volumes),
      pvcs: fc.array(pvcArb, { maxLength: 10 }),
      vms: fc.array(otherVmArb, { maxLength: 4 }),
      removeAll: fc.boolean(),
      clusterName: fc.constantFrom(...CLUSTERS),
    }),
  )
  .map((r) => (r.vmi === undefined ? { ...r, vmi: undefined } : r));

/** The hot-plug facts, recomputed independently of the implementation. */
function hotPluggedClaims(i: RemovalInputs): Set<string> {
  const hot = new Set<string>();
  const all = [...(i.vm.spec.template.spec.volumes ?? []), ...(i.vmi?.spec?.volumes ?? [])];
  for (const v of all) if (v.persistentVolumeClaim?.hotpluggable) hot.add(v.persistentVolumeClaim.claimName);
  for (const s of i.vmi?.status?.volumeStatus ?? []) {
    if (!s.hotplugVolume) continue;
    for (const v of all)
      if (v.name === s.name && v.persistentVolumeClaim) hot.add(v.persistentVolumeClaim.claimName);
  }
  return hot;
}

function claimsOf(volumes: Volume[] | undefined): string[] {
  return (volumes ?? [])
    .flatMap((v) => [v.persistentVolumeClaim?.claimName, v.dataVolume?.name])
    .filter((n): n is string => !!n);
}

const RUNS = { numRuns: 2000 };

describe('planRemoval: properties', () => {
  it('never plans a PVC that exists only outside the VM’s namespace', () => {
    fc.assert(
      fc.property(inputsArb, (i) => {
        const plan = planRemoval(i);
        assert.equal(plan.namespace, 'ns-a');
        const own = new Set([
          ...claimsOf(i.vm.spec.template.spec.volumes),
          ...claimsOf(i.vmi?.spec?.volumes),
        ]);
        const here = new Set(
          i.pvcs.filter((p) => p.metadata.namespace === 'ns-a').map((p) => p.metadata.name),
        );
        for (const p of plan.pvcs)
          assert.ok(own.has(p.name) || here.has(p.name), `${p.name} is neither the VM's nor in ns-a`);
      }),
      RUNS,
    );
  });

  it('never plans a PVC labelled for another guest cluster', () => {
    fc.assert(
      fc.property(inputsArb, (i) => {
        const plan = planRemoval(i);
        for (const p of plan.pvcs) {
          for (const candidate of i.pvcs) {
            if (candidate.metadata.namespace !== 'ns-a' || candidate.metadata.name !== p.name) continue;
            const owner = candidate.metadata.labels?.[CLUSTER_LABEL];
            assert.ok(owner === undefined || owner === i.clusterName, `${p.name} belongs to "${owner}"`);
          }
        }
      }),
      RUNS,
    );
  });

  it('never plans a PVC that another existing VM in the namespace references', () => {
    fc.assert(
      fc.property(inputsArb, (i) => {
        const used = new Set(
          i.vms
            .filter((v) => v.metadata.namespace === 'ns-a' && v.metadata.name !== 'vm-0')
            .flatMap((v) => claimsOf(v.spec.template.spec.volumes)),
        );
        for (const p of planRemoval(i).pvcs) assert.ok(!used.has(p.name), `${p.name} is used by another VM`);
      }),
      RUNS,
    );
  });

  it('a plain removal never plans a hot-plugged volume', () => {
    fc.assert(
      fc.property(inputsArb, (i) => {
        const hot = hotPluggedClaims(i);
        for (const p of planRemoval({ ...i, removeAll: false }).pvcs)
          assert.ok(!hot.has(p.name), `${p.name} is hot-plugged`);
      }),
      RUNS,
    );
  });

  it('decides every candidate exactly once: planned, kept or refused with a reason, never two, no duplicates', () => {
    fc.assert(
      fc.property(inputsArb, (i) => {
        const plan = planRemoval(i);
        const planned = names(plan.pvcs);
        assert.equal(new Set(planned).size, planned.length, 'duplicates');
        const refused = new Set(names(plan.refused));
        for (const n of names(plan.kept)) assert.ok(!refused.has(n), `${n} both kept and refused`);
        const kept = new Set([...names(plan.kept), ...refused]);
        for (const n of planned) assert.ok(!kept.has(n), `${n} both planned and kept`);
        for (const item of [...plan.pvcs, ...plan.kept, ...plan.refused]) assert.ok(item.reason.length > 10);
        const candidates = new Set(
          (i.vm.spec.template.spec.volumes ?? [])
            .flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []))
            .filter((c) => i.removeAll || !hotPluggedClaims(i).has(c)),
        );
        if (i.removeAll && i.clusterName !== '') {
          for (const p of i.pvcs) {
            if (p.metadata.namespace === 'ns-a' && p.metadata.labels?.[CLUSTER_LABEL] === i.clusterName) {
              candidates.add(p.metadata.name);
            }
          }
        }
        for (const c of candidates) assert.ok(planned.includes(c) || kept.has(c), `${c} was not decided`);
        assert.equal(removedPvcsAnnotationValue(plan), planned.join(','));
      }),
      RUNS,
    );
  });

  it('a whole-cluster removal plans a superset of the plain removal', () => {
    fc.assert(
      fc.property(inputsArb, (i) => {
        const plain = new Set(names(planRemoval({ ...i, removeAll: false }).pvcs));
        const all = new Set(names(planRemoval({ ...i, removeAll: true }).pvcs));
        for (const n of plain)
          assert.ok(all.has(n), `${n} planned on a plain removal but not on a whole-cluster one`);
      }),
      RUNS,
    );
  });
});
