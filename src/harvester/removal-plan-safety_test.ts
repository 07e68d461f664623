// The removal plan's safety properties (issue 7 §2) over worlds removal-plan_test.ts's
// generators do not reach: random namespace, VM, claim and guest-cluster names (with
// near-collisions: case, prefixes, a stray space, an empty value), other VMs named like the
// one removed or being deleted themselves, DataVolumes, volumes that are not claims, the VM
// template and the running VMI naming one volume differently (a template edited since the
// VMI started), and hot-plug known only from the VMI's volume status. Plus one property the
// other file has no form of: objects in other namespaces never change what is planned.
// Claim names are hostile too (issue 15 §4): Harvester splits the annotation on `,`, so a
// name holding a comma, a space, another namespace's name or other VMs' claims must never
// reach it; the properties check what Harvester would delete, the annotation split as it does.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { runningVmiArb } from './testing/vmi-arbitrary.js';
import { LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import { planRemoval, removedPvcsAnnotationValue, type RemovalInputs } from './removal-plan.js';
import type { PersistentVolumeClaim, VirtualMachine, VirtualMachineInstance, Volume } from './types.js';

/** Kubernetes' rule for PVC names, written here apart from the implementation. */
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const dnsLabel = fc.stringMatching(/^[a-z][a-z0-9-]{0,6}[a-z0-9]$/);

interface World {
  vmName: string;
  /** The VM's namespace first. */
  namespaces: string[];
  claims: string[];
  /** Claim names no PVC can have: commas joining other claims, spaces, "ns/name", case, length. */
  hostileClaims: string[];
  /** Label values: the clusters, and near-collisions of them. */
  clusterValues: string[];
  clusterName: string;
}

const worldArb: fc.Arbitrary<World> = fc
  .record({
    vmName: dnsLabel,
    namespaces: fc.uniqueArray(dnsLabel, { minLength: 2, maxLength: 4 }),
    claims: fc.uniqueArray(dnsLabel, { minLength: 3, maxLength: 10 }),
    clusters: fc.uniqueArray(dnsLabel, { minLength: 1, maxLength: 3 }),
  })
  .chain((w) =>
    fc.constantFrom('', ...w.clusters).map((clusterName) => ({
      vmName: w.vmName,
      namespaces: w.namespaces,
      claims: w.claims,
      hostileClaims: hostile(w.claims, w.namespaces),
      clusterName,
      clusterValues: [
        '',
        ...w.clusters,
        ...w.clusters.flatMap((c) => [c.toUpperCase(), `${c}-x`, ` ${c}`, c.slice(0, -1)]),
      ],
    })),
  );

function hostile(claims: string[], namespaces: string[]): string[] {
  const [a = 'a', b = 'b', c = 'c'] = claims;
  const other = namespaces[1] ?? 'other';
  return [
    `${a},${b}`,
    `${a}, ${b}`,
    `${b},${c},${a}`,
    `${a},`,
    `,${b}`,
    ` ${a}`,
    `${b} `,
    `${a}\n`,
    `${other}/${c}`,
    a.toUpperCase(),
    `${a}..${b}`,
    `-${b}`,
    'x'.repeat(254),
  ];
}

const VOLUME_NAMES = ['disk-0', 'disk-1', 'disk-2', 'data', 'hp-a', 'hp-b', 'cloudinitdisk'];

function volumeArb(w: World): fc.Arbitrary<Volume> {
  const hot = fc.option(fc.boolean(), { nil: undefined });
  const name = fc.constantFrom(...VOLUME_NAMES);
  const claim = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...w.claims) },
    { weight: 1, arbitrary: fc.constantFrom(...w.hostileClaims) },
  );
  return fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({ name, claim, hot }).map(({ name, claim, hot }): Volume => ({
        name,
        persistentVolumeClaim: { claimName: claim, ...(hot === undefined ? {} : { hotpluggable: hot }) },
      })),
    },
    {
      weight: 2,
      arbitrary: fc.record({ name, claim, hot }).map(({ name, claim, hot }): Volume => ({
        name,
        dataVolume: { name: claim, ...(hot === undefined ? {} : { hotpluggable: hot }) },
      })),
    },
    {
      weight: 1,
      arbitrary: name.map((n): Volume => ({ name: n, cloudInitNoCloud: { userData: '#cloud-config\n' } })),
    },
  );
}

/** Volumes with unique names, as KubeVirt requires within one spec. */
const volumesArb = (w: World, max: number): fc.Arbitrary<Volume[]> =>
  fc.uniqueArray(volumeArb(w), { maxLength: max, selector: (v) => v.name });

function vm(name: string, namespace: string, volumes: Volume[], deleting = false): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name,
      namespace,
      uid: `uid-${namespace}-${name}`,
      ...(deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}),
    },
    spec: { runStrategy: 'RerunOnFailure', template: { spec: { domain: { devices: {} }, volumes } } },
  };
}

/**
 * The running VMI: its own volumes (often the template's, sometimes diverged), and a volume
 * status consistent with them, as KubeVirt writes it: an entry's claim is that of the VMI's
 * volume of that name; an entry for no volume of the spec is a hot-plug known only there.
 */
function vmiArb(w: World, template: Volume[]): fc.Arbitrary<VirtualMachineInstance | undefined> {
  return runningVmiArb({
    name: w.vmName,
    namespace: w.namespaces[0] ?? '',
    volumeNames: VOLUME_NAMES,
    orphanClaims: fc.option(fc.constantFrom(...w.claims, ...w.hostileClaims), { nil: undefined }),
    template,
    otherVolumes: volumesArb(w, 5),
  });
}

function pvcArb(w: World, namespaces = w.namespaces): fc.Arbitrary<PersistentVolumeClaim> {
  return fc
    .record({
      name: fc.constantFrom(...w.claims),
      namespace: fc.constantFrom(...namespaces),
      cluster: fc.option(fc.constantFrom(...w.clusterValues), { nil: undefined }),
      noise: fc.option(fc.constantFrom(...w.clusterValues), { nil: undefined }),
    })
    .map(({ name, namespace, cluster, noise }) => ({
      metadata: {
        name,
        namespace,
        labels: {
          ...(cluster === undefined ? {} : { [LABEL_GUEST_CLUSTER_NAME]: cluster }),
          // Look-alike keys must not count.
          ...(noise === undefined
            ? {}
            : { [`${LABEL_GUEST_CLUSTER_NAME}-old`]: noise, 'cluster.x-k8s.io/cluster-name': noise }),
        },
      },
      spec: {},
    }));
}

function otherVmArb(w: World, namespaces = w.namespaces): fc.Arbitrary<VirtualMachine> {
  return fc
    .record({
      name: fc.oneof(fc.constant(w.vmName), dnsLabel),
      namespace: fc.constantFrom(...namespaces),
      volumes: volumesArb(w, 4),
      deleting: fc.boolean(),
    })
    .map(({ name, namespace, volumes, deleting }) => vm(name, namespace, volumes, deleting));
}

interface Case {
  w: World;
  inputs: RemovalInputs;
}

const caseArb: fc.Arbitrary<Case> = worldArb.chain((w) =>
  volumesArb(w, 6).chain((template) =>
    fc
      .record({
        vmi: vmiArb(w, template),
        pvcs: fc.array(pvcArb(w), { maxLength: 14 }),
        others: fc.array(otherVmArb(w), { maxLength: 5 }),
        includeSelf: fc.boolean(),
        removeAll: fc.boolean(),
      })
      .map(({ vmi, pvcs, others, includeSelf, removeAll }): Case => {
        const target = vm(w.vmName, w.namespaces[0] ?? '', template);
        return {
          w,
          inputs: {
            vm: target,
            ...(vmi ? { vmi } : {}),
            pvcs: pvcs,
            vms: includeSelf ? [target, ...others] : others,
            removeAll,
            clusterName: w.clusterName,
          },
        };
      }),
  ),
);

/** What Harvester deletes: the annotation split on `,` and trimmed, as its VM controller reads it. */
const planned = (inputs: RemovalInputs): string[] =>
  removedPvcsAnnotationValue(planRemoval(inputs))
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
const home = (c: Case): string => c.w.namespaces[0] ?? '';
const claimsOf = (volumes: readonly Volume[] | undefined): string[] =>
  (volumes ?? [])
    .flatMap((v) => [v.persistentVolumeClaim?.claimName, v.dataVolume?.name])
    .filter((n): n is string => !!n);

/** Every claim some source calls hot-plugged (the oracle, written apart from the implementation). */
function hotPlugged(inputs: RemovalInputs): Set<string> {
  const hot = new Set<string>();
  const specs = [...(inputs.vm.spec.template.spec.volumes ?? []), ...(inputs.vmi?.spec?.volumes ?? [])];
  for (const v of specs)
    if (v.persistentVolumeClaim?.hotpluggable) hot.add(v.persistentVolumeClaim.claimName);
  for (const s of inputs.vmi?.status?.volumeStatus ?? []) {
    if (!s.hotplugVolume) continue;
    for (const v of specs) if (v.name === s.name) claimsOf([v]).forEach((c) => hot.add(c));
    if (s.persistentVolumeClaimInfo?.claimName) hot.add(s.persistentVolumeClaimInfo.claimName);
  }
  return hot;
}

const RUNS = { numRuns: 3_000 };

describe('planRemoval: safety over random worlds', () => {
  it('plans only existing PVCs of its namespace: the VM’s own, or labelled for its cluster', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        // The VM's own: its template's and its VMI's claims, and those its VMI's status names.
        const own = new Set([
          ...claimsOf(c.inputs.vm.spec.template.spec.volumes),
          ...claimsOf(c.inputs.vmi?.spec?.volumes),
          ...(c.inputs.vmi?.status?.volumeStatus ?? []).flatMap(
            (s) => s.persistentVolumeClaimInfo?.claimName ?? [],
          ),
        ]);
        const here = new Set(
          c.inputs.pvcs.filter((p) => p.metadata.namespace === home(c)).map((p) => p.metadata.name),
        );
        const labelled = (name: string): boolean =>
          c.inputs.removeAll &&
          c.w.clusterName !== '' &&
          c.inputs.pvcs.some(
            (p) =>
              p.metadata.namespace === home(c) &&
              p.metadata.name === name &&
              p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === c.w.clusterName,
          );
        for (const name of planned(c.inputs)) {
          assert.ok(here.has(name), `${JSON.stringify(name)} is no PVC of ${home(c)}`);
          assert.ok(
            own.has(name) || labelled(name),
            `${name} is neither the VM’s nor labelled for its cluster`,
          );
        }
      }),
      RUNS,
    );
  });

  it('the annotation holds exactly the planned names, each a valid PVC name', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const plan = planRemoval(c.inputs);
        const value = removedPvcsAnnotationValue(plan);
        assert.deepEqual(
          value === '' ? [] : value.split(','),
          plan.pvcs.map((p) => p.name),
        );
        for (const p of plan.pvcs)
          assert.match(p.name, DNS_SUBDOMAIN, `${JSON.stringify(p.name)} is no PVC name`);
      }),
      RUNS,
    );
  });

  it('refuses every hostile claim name of the VM, with the reason, and plans none of its parts', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const plan = planRemoval(c.inputs);
        const refused = new Map(plan.refused.map((r) => [r.name, r.reason]));
        const volumes = [
          ...(c.inputs.vm.spec.template.spec.volumes ?? []),
          ...(c.inputs.vmi?.spec?.volumes ?? []),
        ];
        for (const v of volumes) {
          const name = v.persistentVolumeClaim?.claimName;
          if (name === undefined || !c.w.hostileClaims.includes(name)) continue;
          assert.match(
            refused.get(name) ?? '',
            /is no PVC name: .*; never deleted$/,
            `${JSON.stringify(name)}`,
          );
        }
        for (const r of plan.refused) assert.ok(!plan.pvcs.some((p) => p.name === r.name));
      }),
      RUNS,
    );
  });

  it('plans the same whatever PVCs and VMs other namespaces hold', () => {
    fc.assert(
      fc.property(
        caseArb.chain((c) => {
          const elsewhere = c.w.namespaces.slice(1);
          return fc.tuple(
            fc.constant(c),
            fc.array(pvcArb(c.w, elsewhere), { minLength: 1, maxLength: 8 }),
            fc.array(otherVmArb(c.w, elsewhere), { maxLength: 4 }),
          );
        }),
        ([c, pvcs, vms]) => {
          const crowded: RemovalInputs = {
            ...c.inputs,
            pvcs: [...c.inputs.pvcs, ...pvcs],
            vms: [...c.inputs.vms, ...vms],
          };
          assert.deepEqual(planned(crowded), planned(c.inputs));
        },
      ),
      RUNS,
    );
  });

  it('never plans a PVC labelled for another guest cluster (exact value; look-alike keys ignored)', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        for (const name of planned(c.inputs)) {
          for (const p of c.inputs.pvcs) {
            if (p.metadata.namespace !== home(c) || p.metadata.name !== name) continue;
            const owner = p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME];
            assert.ok(
              owner === undefined || owner === c.w.clusterName,
              `${name} is labelled "${owner}", not "${c.w.clusterName}"`,
            );
          }
        }
      }),
      RUNS,
    );
  });

  it('never plans a PVC another VM of the namespace references (claim or DataVolume; being deleted or not)', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const used = new Set(
          c.inputs.vms
            .filter((v) => v.metadata.namespace === home(c) && v.metadata.name !== c.w.vmName)
            .flatMap((v) => claimsOf(v.spec.template.spec.volumes)),
        );
        for (const name of planned(c.inputs)) assert.ok(!used.has(name), `${name} is used by another VM`);
      }),
      RUNS,
    );
  });

  it('a plain removal never plans a volume any source calls hot-plugged', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const plain = { ...c.inputs, removeAll: false };
        const hot = hotPlugged(plain);
        for (const name of planned(plain)) assert.ok(!hot.has(name), `${name} is hot-plugged`);
      }),
      RUNS,
    );
  });
});

describe('planRemoval: the cases the properties found', () => {
  it('keeps the VMI’s hot-plugged claim when the template has since given that volume name another claim', () => {
    const target = vm('m1', 'default', [
      { name: 'disk-0', persistentVolumeClaim: { claimName: 'boot' } },
      { name: 'data', persistentVolumeClaim: { claimName: 'new-claim' } },
    ]);
    const vmi: VirtualMachineInstance = {
      metadata: { name: 'm1', namespace: 'default' },
      spec: {
        domain: { devices: {} },
        volumes: [
          { name: 'disk-0', persistentVolumeClaim: { claimName: 'boot' } },
          { name: 'data', persistentVolumeClaim: { claimName: 'workload' } },
        ],
      },
      status: {
        phase: 'Running',
        volumeStatus: [
          {
            name: 'data',
            persistentVolumeClaimInfo: { claimName: 'workload' },
            hotplugVolume: { attachPodName: 'hp-1' },
          },
        ],
      },
    };
    const plan = planRemoval({
      vm: target,
      vmi,
      pvcs: ['boot', 'new-claim', 'workload'].map((name) => ({
        metadata: { name, namespace: 'default' },
        spec: {},
      })),
      vms: [],
      removeAll: false,
      clusterName: 'c1',
    });
    assert.deepEqual(
      plan.pvcs.map((p) => p.name),
      ['boot'],
    );
    assert.deepEqual(plan.kept.map((k) => k.name).sort(), ['new-claim', 'workload']);
  });
});
