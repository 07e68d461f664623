// What a removal reads (removal-reads.ts, its pure choices in src/harvester/removal-scope.ts) and what that does to the plan, over random
// namespaces: the machine's VM (labelled for its cluster or not), its instance with
// hot-plugs known only from its volume status, other VMs of the same guest cluster, of other
// clusters and of none (claims and DataVolumes, some being deleted) sharing the machine's
// claims, and PVCs labelled for any of them. The reads go to an in-memory namespace that
// counts what it hands out. The properties: no PVC that a VM the removal protects by uses is
// ever planned; a plain removal plans no hot-plugged volume; the plan differs from one made
// from every VM and PVC of the namespace only by PVCs that a VM outside the guest cluster
// uses (what the removal leaves to Harvester's webhook); and what is read does not grow with
// other clusters' VMs and PVCs. Where Harvester handles the machine's VM (its cleanup
// finalizer), the namespace also answers dry-run deletes as Harvester's PVC webhook does, or
// fails to.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { runningVmiArb } from '../../harvester/testing/vmi-arbitrary.js';
import {
  ANNOTATION_REMOVE_ALL_PVCS,
  FINALIZER_HARVESTER_VM_CLEANUP,
  LABEL_GUEST_CLUSTER_NAME,
} from '../../harvester/labels.js';
import { planRemoval, type RemovalInputs } from '../../harvester/removal-plan.js';
import {
  beyondClusterCandidates,
  claimsToRead,
  guestClusterSelector,
  type DeleteAnswer,
} from '../../harvester/removal-scope.js';
import { readForRemoval, type RemovalReader } from './removal-reads.js';
import type {
  PersistentVolumeClaim,
  VirtualMachine,
  VirtualMachineInstance,
  Volume,
} from '../../harvester/types.js';

const NS = 'default';
const TARGET = 'm1';
const dnsLabel = fc.stringMatching(/^[a-z][a-z0-9-]{0,6}[a-z0-9]$/);

interface World {
  clusterName: string;
  vms: VirtualMachine[];
  vmi: VirtualMachineInstance | undefined;
  pvcs: PersistentVolumeClaim[];
  /**
   * How a dry-run delete of a PVC is answered: as Harvester's PVC webhook would (a VM of the
   * namespace not being deleted names it as a claim), with no answer to rely on, or not at all.
   */
  webhook?: 'answers' | 'fails';
}

/** Harvester's PVC webhook: refuses while a VM not being deleted names the PVC as a claim. */
function webhookAnswer(w: World, name: string): DeleteAnswer {
  const user = w.vms.find(
    (v) =>
      v.metadata.namespace === NS &&
      !v.metadata.deletionTimestamp &&
      (v.spec.template.spec.volumes ?? []).some((vol) => vol.persistentVolumeClaim?.claimName === name),
  );
  return user
    ? {
        kind: 'refused',
        reason: `can not delete the volume ${name} which is currently attached to VM: ${NS}/${user.metadata.name}`,
      }
    : { kind: 'allowed' };
}

/** An in-memory namespace (plus objects of another one, never to be handed out). */
class Namespace implements RemovalReader {
  objectsRead = 0;
  requests: string[] = [];
  readonly askToDeletePvc?: (pvc: PersistentVolumeClaim) => Promise<DeleteAnswer>;
  constructor(private readonly w: World) {
    if (w.webhook) {
      this.askToDeletePvc = (pvc) => {
        this.requests.push(`dry-run delete pvc ${pvc.metadata.name}`);
        return Promise.resolve(
          w.webhook === 'answers' ? webhookAnswer(w, pvc.metadata.name) : { kind: 'unknown' },
        );
      };
    }
  }

  private give<T>(request: string, items: T[]): T[] {
    this.requests.push(request);
    this.objectsRead += items.length;
    return items;
  }

  private static selects(selector: string | undefined, labels: Record<string, string> | undefined): boolean {
    if (selector === undefined) return true;
    const [key = '', value = ''] = selector.split('=');
    return labels?.[key] === value;
  }

  findVm(name: string): Promise<VirtualMachine | undefined> {
    const vm = this.w.vms.find((v) => v.metadata.namespace === NS && v.metadata.name === name);
    return Promise.resolve(this.give(`get vm ${name}`, vm ? [vm] : [])[0]);
  }
  findVmi(name: string): Promise<VirtualMachineInstance | undefined> {
    const vmi = name === TARGET ? this.w.vmi : undefined;
    return Promise.resolve(this.give(`get vmi ${name}`, vmi ? [vmi] : [])[0]);
  }
  findPvc(name: string): Promise<PersistentVolumeClaim | undefined> {
    const pvc = this.w.pvcs.find((p) => p.metadata.namespace === NS && p.metadata.name === name);
    return Promise.resolve(this.give(`get pvc ${name}`, pvc ? [pvc] : [])[0]);
  }
  listVms(labelSelector?: string): Promise<VirtualMachine[]> {
    const vms = this.w.vms.filter(
      (v) => v.metadata.namespace === NS && Namespace.selects(labelSelector, v.metadata.labels),
    );
    return Promise.resolve(this.give(`list vms ${labelSelector ?? '(all)'}`, vms));
  }
  listPvcs(labelSelector: string): Promise<PersistentVolumeClaim[]> {
    const pvcs = this.w.pvcs.filter(
      (p) => p.metadata.namespace === NS && Namespace.selects(labelSelector, p.metadata.labels),
    );
    return Promise.resolve(this.give(`list pvcs ${labelSelector}`, pvcs));
  }
}

const clusterLabel = (cluster: string | undefined): Record<string, string> =>
  cluster === undefined ? {} : { [LABEL_GUEST_CLUSTER_NAME]: cluster };

function vm(
  name: string,
  namespace: string,
  volumes: Volume[],
  opts: { cluster?: string; deleting?: boolean; removeAll?: boolean; harvester?: boolean } = {},
): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name,
      namespace,
      uid: `uid-${namespace}-${name}`,
      labels: clusterLabel(opts.cluster),
      ...(opts.removeAll ? { annotations: { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' } } : {}),
      ...(opts.deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}),
      ...(opts.harvester ? { finalizers: [FINALIZER_HARVESTER_VM_CLEANUP] } : {}),
    },
    spec: { runStrategy: 'RerunOnFailure', template: { spec: { domain: { devices: {} }, volumes } } },
  };
}

const VOLUME_NAMES = ['disk-0', 'disk-1', 'data', 'hp-a', 'hp-b', 'cloudinitdisk'];

function volumesArb(claims: string[], max: number): fc.Arbitrary<Volume[]> {
  const hot = fc.option(fc.boolean(), { nil: undefined });
  const name = fc.constantFrom(...VOLUME_NAMES);
  const claim = fc.constantFrom(...claims);
  const volume: fc.Arbitrary<Volume> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({ name, claim, hot }).map(({ name, claim, hot }) => ({
        name,
        persistentVolumeClaim: { claimName: claim, ...(hot === undefined ? {} : { hotpluggable: hot }) },
      })),
    },
    {
      weight: 2,
      arbitrary: fc.record({ name, claim, hot }).map(({ name, claim, hot }) => ({
        name,
        dataVolume: { name: claim, ...(hot === undefined ? {} : { hotpluggable: hot }) },
      })),
    },
    {
      weight: 1,
      arbitrary: name.map((n) => ({ name: n, cloudInitNoCloud: { userData: '#cloud-config\n' } })),
    },
  );
  return fc.uniqueArray(volume, { maxLength: max, selector: (v) => v.name });
}

/** The running instance: the template's volumes or others, and hot-plugs known from its status only. */
function vmiArb(claims: string[], template: Volume[]): fc.Arbitrary<VirtualMachineInstance | undefined> {
  return runningVmiArb({
    name: TARGET,
    namespace: NS,
    volumeNames: VOLUME_NAMES,
    orphanClaims: fc.constantFrom(...claims),
    template,
    otherVolumes: volumesArb(claims, 4),
  });
}

interface Case {
  world: World;
  /** The label values a VM or PVC may carry: the machine's cluster (when any), others, none. */
  clusters: string[];
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    claims: fc.uniqueArray(dnsLabel, { minLength: 3, maxLength: 10 }),
    others: fc.uniqueArray(dnsLabel, { minLength: 1, maxLength: 3 }),
    // "" and a name no label can hold: a machine outside a guest cluster, checked namespace-wide.
    clusterName: fc.constantFrom('c1', 'c1', 'c1', '', 'Not A Label!'),
  })
  .chain(({ claims, others, clusterName }) => {
    const foreign = others.filter((c) => c !== clusterName).map((c) => `x-${c}`);
    const clusters = [...(guestClusterSelector(clusterName) ? [clusterName] : []), ...foreign];
    const labelArb = fc.option(fc.constantFrom(...clusters), { nil: undefined });
    return volumesArb(claims, 6).chain((template) =>
      fc
        .record({
          vmi: vmiArb(claims, template),
          selfLabelled: fc.boolean(),
          removeAll: fc.boolean(),
          harvester: fc.boolean(),
          webhook: fc.constantFrom<World['webhook']>('answers', 'answers', 'fails', undefined),
          others: fc.uniqueArray(
            fc.record({
              name: dnsLabel.filter((n) => n !== TARGET),
              cluster: labelArb,
              volumes: volumesArb(claims, 4),
              deleting: fc.boolean(),
            }),
            { maxLength: 8, selector: (o) => o.name },
          ),
          pvcs: fc.uniqueArray(fc.record({ name: fc.constantFrom(...claims), cluster: labelArb }), {
            maxLength: 12,
            selector: (p) => p.name,
          }),
          elsewhere: fc.array(fc.record({ name: fc.constantFrom(...claims), cluster: labelArb }), {
            maxLength: 4,
          }),
        })
        .map(({ vmi, selfLabelled, removeAll, harvester, webhook, others, pvcs, elsewhere }): Case => {
          const target = vm(TARGET, NS, template, {
            ...(selfLabelled && guestClusterSelector(clusterName) ? { cluster: clusterName } : {}),
            removeAll,
            harvester,
          });
          const pvc = (namespace: string) => (p: { name: string; cluster: string | undefined }) => ({
            metadata: { name: p.name, namespace, labels: clusterLabel(p.cluster) },
            spec: {},
          });
          return {
            clusters,
            world: {
              clusterName,
              ...(webhook ? { webhook } : {}),
              vmi,
              vms: [
                target,
                ...others.map((o) =>
                  vm(o.name, NS, o.volumes, {
                    ...(o.cluster ? { cluster: o.cluster } : {}),
                    deleting: o.deleting,
                  }),
                ),
                // Another namespace's VM of the same name and cluster: never read.
                vm(TARGET, 'elsewhere', [], { cluster: clusterName }),
              ],
              pvcs: [...pvcs.map(pvc(NS)), ...elsewhere.map(pvc('elsewhere'))],
            },
          };
        }),
    );
  });

const RUNS = { numRuns: 2_000 };

const claimsOf = (volumes: readonly Volume[] | undefined): string[] =>
  (volumes ?? [])
    .flatMap((v) => [v.persistentVolumeClaim?.claimName, v.dataVolume?.name])
    .filter((n): n is string => !!n);

const planned = (inputs: RemovalInputs): Set<string> => new Set(planRemoval(inputs).pvcs.map((p) => p.name));

async function readAndPlan(w: World): Promise<{ inputs: RemovalInputs; reads: Namespace }> {
  const reads = new Namespace(w);
  const inputs = await readForRemoval(reads, { name: TARGET, clusterName: w.clusterName });
  assert.ok(inputs, 'the VM exists');
  return { inputs, reads };
}

/** The VMs whose use of a PVC the removal promises to respect: its cluster's, or all without one. */
function protecting(w: World): VirtualMachine[] {
  const others = w.vms.filter((v) => v.metadata.namespace === NS && v.metadata.name !== TARGET);
  if (!guestClusterSelector(w.clusterName)) return others;
  return others.filter((v) => v.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === w.clusterName);
}

describe('readForRemoval: what a removal reads, over random namespaces', () => {
  it('never plans a PVC another VM of the guest cluster uses (of the namespace, outside a cluster)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ world }) => {
        const { inputs } = await readAndPlan(world);
        const used = new Set(protecting(world).flatMap((v) => claimsOf(v.spec.template.spec.volumes)));
        for (const name of planned(inputs))
          assert.ok(!used.has(name), `${name} is used by a VM of the cluster`);
      }),
      RUNS,
    );
  });

  it('a plain removal plans no volume that the template, the instance or only its volume status calls hot-plugged', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ world }) => {
        const { inputs } = await readAndPlan(world);
        if (inputs.removeAll) return;
        const hot = new Set<string>();
        const specs = [...(inputs.vm.spec.template.spec.volumes ?? []), ...(world.vmi?.spec?.volumes ?? [])];
        for (const v of specs)
          if (v.persistentVolumeClaim?.hotpluggable) hot.add(v.persistentVolumeClaim.claimName);
        for (const s of world.vmi?.status?.volumeStatus ?? []) {
          if (!s.hotplugVolume) continue;
          for (const v of specs) if (v.name === s.name) claimsOf([v]).forEach((c) => hot.add(c));
          if (s.persistentVolumeClaimInfo?.claimName) hot.add(s.persistentVolumeClaimInfo.claimName);
        }
        for (const name of planned(inputs)) assert.ok(!hot.has(name), `${name} is hot-plugged`);
      }),
      RUNS,
    );
  });

  it('plans as a read of the whole namespace would, but for PVCs a VM outside the guest cluster uses', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ world }) => {
        const { inputs } = await readAndPlan(world);
        const everything: RemovalInputs = {
          ...inputs,
          pvcs: world.pvcs.filter((p) => p.metadata.namespace === NS),
          vms: world.vms.filter((v) => v.metadata.namespace === NS),
        };
        const whole = planned(everything);
        const reduced = planned(inputs);
        for (const name of whole)
          assert.ok(reduced.has(name), `${name} planned from the whole namespace only`);
        const protectingNames = new Set(protecting(world).map((v) => v.metadata.name));
        const outside = new Set(
          world.vms
            .filter((v) => v.metadata.namespace === NS && v.metadata.name !== TARGET)
            .filter((v) => !protectingNames.has(v.metadata.name))
            .flatMap((v) => claimsOf(v.spec.template.spec.volumes)),
        );
        for (const name of reduced) {
          if (!whole.has(name))
            assert.ok(outside.has(name), `${name}: planned for another reason than an outside VM`);
        }
        // Outside a guest cluster nothing is given up.
        if (!guestClusterSelector(world.clusterName))
          assert.deepEqual([...reduced].sort(), [...whole].sort());
      }),
      RUNS,
    );
  });

  it('a whole-cluster removal never plans a volume of the cluster that a VM outside it uses, when no VM of the cluster names it', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ world }) => {
        const { inputs } = await readAndPlan(world);
        if (!inputs.removeAll) return;
        // The machine's own disks used outside the cluster are left to Harvester's webhook.
        const clusterNames = new Set([
          ...protecting(world).flatMap((v) => claimsOf(v.spec.template.spec.volumes)),
          ...claimsToRead(inputs.vm, world.vmi),
          ...claimsOf(inputs.vm.spec.template.spec.volumes),
        ]);
        // When Harvester answered, what its webhook counts: claims of VMs not being deleted.
        const answered = inputs.harvesterAnswers !== undefined;
        const usedAnywhere = new Set(
          world.vms
            .filter((v) => v.metadata.namespace === NS && v.metadata.name !== TARGET)
            .filter((v) => !answered || !v.metadata.deletionTimestamp)
            .flatMap((v) =>
              answered
                ? (v.spec.template.spec.volumes ?? []).flatMap(
                    (vol) => vol.persistentVolumeClaim?.claimName ?? [],
                  )
                : claimsOf(v.spec.template.spec.volumes),
            ),
        );
        for (const name of planned(inputs)) {
          if (clusterNames.has(name)) continue;
          assert.ok(
            !usedAnywhere.has(name),
            `${name}: labelled for the cluster, used by a VM outside it, planned`,
          );
        }
      }),
      RUNS,
    );
  });

  it('reads the same whatever VMs and PVCs other guest clusters have in the namespace', async () => {
    await fc.assert(
      fc.asyncProperty(
        caseArb.filter(({ world }) => guestClusterSelector(world.clusterName) !== undefined),
        fc.array(fc.tuple(dnsLabel, fc.constantFrom('x-a', 'x-b')), { minLength: 1, maxLength: 30 }),
        async ({ world }, crowd) => {
          const first = await readAndPlan(world);
          // A whole-cluster removal of a volume no VM of the cluster names reads every VM,
          // unless Harvester answered for each such volume.
          const wide = (i: RemovalInputs): boolean =>
            beyondClusterCandidates(i).length > 0 && i.harvesterAnswers === undefined;
          if (wide(first.inputs)) return;
          const before = first.reads;
          const taken = new Set(world.vms.map((v) => v.metadata.name));
          const named = new Set(claimsToRead(world.vms[0] as VirtualMachine, world.vmi));
          const crowded: World = {
            ...world,
            vms: [
              ...world.vms,
              ...crowd
                .filter(([n]) => !taken.has(n))
                .map(([n, cluster]) =>
                  vm(`o-${n}`, NS, [{ name: 'disk-0', persistentVolumeClaim: { claimName: `o-${n}` } }], {
                    cluster,
                  }),
                ),
            ],
            pvcs: [
              ...world.pvcs,
              ...crowd
                .filter(([n]) => !named.has(`o-${n}`))
                .map(([n, cluster]) => ({
                  metadata: { name: `o-${n}`, namespace: NS, labels: clusterLabel(cluster) },
                  spec: {},
                })),
            ],
          };
          const again = await readAndPlan(crowded);
          if (wide(again.inputs)) return;
          const after = again.reads;
          assert.equal(after.objectsRead, before.objectsRead);
          assert.deepEqual(after.requests.sort(), before.requests.sort());
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('readForRemoval: examples', () => {
  const boot = { name: 'disk-0', persistentVolumeClaim: { claimName: 'm1-disk-0-abcde' } };
  const pvc = (name: string, cluster?: string): PersistentVolumeClaim => ({
    metadata: { name, namespace: NS, labels: clusterLabel(cluster) },
    spec: {},
  });

  it('a plain removal: the cluster’s VMs (the machine’s among them), its instance and each named PVC by name', async () => {
    const world: World = {
      clusterName: 'c1',
      vms: [vm(TARGET, NS, [boot], { cluster: 'c1' }), vm('other', NS, [], { cluster: 'c2' })],
      vmi: {
        metadata: { name: TARGET, namespace: NS },
        spec: { domain: { devices: {} } },
        status: {
          phase: 'Running',
          volumeStatus: [
            {
              name: 'hp',
              persistentVolumeClaimInfo: { claimName: 'pvc-hot' },
              hotplugVolume: { attachPodName: 'hp-1' },
            },
          ],
        },
      },
      pvcs: [pvc('m1-disk-0-abcde'), pvc('pvc-hot', 'c1'), pvc('pvc-labelled', 'c1')],
    };
    const reads = new Namespace(world);
    const inputs = await readForRemoval(reads, { name: TARGET, clusterName: 'c1' });
    assert.deepEqual(reads.requests.sort(), [
      'get pvc m1-disk-0-abcde',
      'get pvc pvc-hot',
      'get vmi m1',
      `list vms ${LABEL_GUEST_CLUSTER_NAME}=c1`,
    ]);
    assert.ok(inputs);
    const plan = planRemoval(inputs);
    assert.deepEqual(
      plan.pvcs.map((p) => p.name),
      ['m1-disk-0-abcde'],
    );
    assert.deepEqual(
      plan.kept.map((k) => k.name),
      ['pvc-hot'],
    );
  });

  it('a whole-cluster removal adds the PVCs labelled for the cluster; the dry run can ask as if it were one', async () => {
    const world: World = {
      clusterName: 'c1',
      vms: [vm(TARGET, NS, [boot], { cluster: 'c1' })],
      vmi: undefined,
      pvcs: [pvc('m1-disk-0-abcde'), pvc('pvc-labelled', 'c1'), pvc('pvc-other', 'c2')],
    };
    const reads = new Namespace(world);
    const inputs = await readForRemoval(
      reads,
      { name: TARGET, clusterName: 'c1' },
      {
        adjust: (v) => ({
          ...v,
          metadata: { ...v.metadata, annotations: { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' } },
        }),
      },
    );
    assert.ok(inputs?.removeAll);
    assert.ok(reads.requests.includes(`list pvcs ${LABEL_GUEST_CLUSTER_NAME}=c1`));
    assert.deepEqual(
      planRemoval(inputs).pvcs.map((p) => p.name),
      ['m1-disk-0-abcde', 'pvc-labelled'],
    );
  });

  it('a whole-cluster removal asks Harvester about the volumes no VM of the cluster names, and reads no other VM', async () => {
    const removeAll = { cluster: 'c1', removeAll: true, harvester: true };
    const world: World = {
      clusterName: 'c1',
      webhook: 'answers',
      vms: [
        vm(TARGET, NS, [boot], removeAll),
        // Of no guest cluster: the data volume of c1 hot-plugged into it.
        vm('rescue', NS, [
          { name: 'hp', persistentVolumeClaim: { claimName: 'pvc-lent', hotpluggable: true } },
        ]),
        // Going itself: Harvester's webhook does not count it.
        vm('leaving', NS, [{ name: 'hp', persistentVolumeClaim: { claimName: 'pvc-left' } }], {
          deleting: true,
        }),
      ],
      vmi: undefined,
      pvcs: [pvc('m1-disk-0-abcde'), pvc('pvc-lent', 'c1'), pvc('pvc-left', 'c1'), pvc('pvc-free', 'c1')],
    };
    const reads = new Namespace(world);
    const inputs = await readForRemoval(reads, { name: TARGET, clusterName: 'c1' });
    assert.ok(inputs);
    assert.deepEqual(reads.requests.sort(), [
      'dry-run delete pvc pvc-free',
      'dry-run delete pvc pvc-left',
      'dry-run delete pvc pvc-lent',
      'get pvc m1-disk-0-abcde',
      'get vmi m1',
      `list pvcs ${LABEL_GUEST_CLUSTER_NAME}=c1`,
      `list vms ${LABEL_GUEST_CLUSTER_NAME}=c1`,
    ]);
    const plan = planRemoval(inputs);
    assert.deepEqual(plan.pvcs.map((p) => p.name).sort(), ['m1-disk-0-abcde', 'pvc-free', 'pvc-left']);
    assert.deepEqual(
      plan.kept.map((k) => k.name),
      ['pvc-lent'],
    );
    assert.match(
      plan.kept[0]?.reason ?? '',
      /^Harvester refuses to delete it: "can not delete the volume pvc-lent which is currently attached to VM: default\/rescue"$/,
    );

    // No answer to rely on, or no sign of Harvester on the VM: every VM of the namespace protects.
    const unsure = [
      { ...world, webhook: 'fails' as const },
      { ...world, vms: [vm(TARGET, NS, [boot], { ...removeAll, harvester: false }), ...world.vms.slice(1)] },
    ];
    for (const w of unsure) {
      const wide = new Namespace(w);
      const fallback = await readForRemoval(wide, { name: TARGET, clusterName: 'c1' });
      assert.ok(fallback);
      assert.ok(wide.requests.includes('list vms (all)'), JSON.stringify(wide.requests));
      assert.equal(fallback.harvesterAnswers, undefined);
      assert.deepEqual(
        planRemoval(fallback)
          .kept.map((k) => k.name)
          .sort(),
        ['pvc-left', 'pvc-lent'],
      );
    }
  });

  it('finds an unlabelled VM by name; outside a guest cluster (or a name no label holds) every VM of the namespace protects', async () => {
    const world: World = {
      clusterName: 'c1',
      vms: [vm(TARGET, NS, [boot]), vm('rescue', NS, [boot])],
      vmi: undefined,
      pvcs: [pvc('m1-disk-0-abcde')],
    };
    const labelled = new Namespace(world);
    const inputs = await readForRemoval(labelled, { name: TARGET, clusterName: 'c1' });
    assert.equal(inputs?.vm.metadata.name, TARGET);
    assert.ok(labelled.requests.includes(`get vm ${TARGET}`));
    // The rescue VM is of no guest cluster: not seen by a machine of c1 (Harvester's webhook guards it).
    assert.deepEqual(
      planRemoval(inputs).pvcs.map((p) => p.name),
      ['m1-disk-0-abcde'],
    );
    for (const clusterName of ['', 'Not A Label!']) {
      const reads = new Namespace({ ...world, clusterName });
      const outside = await readForRemoval(reads, { name: TARGET, clusterName });
      assert.ok(reads.requests.includes('list vms (all)'), clusterName);
      assert.ok(outside);
      assert.deepEqual(planRemoval(outside).pvcs, [], clusterName);
      assert.match(planRemoval(outside).kept[0]?.reason ?? '', /still used by VM default\/rescue/);
    }
  });

  it('undefined when the VM is gone; claim names no PVC can have are never read', async () => {
    const gone = new Namespace({ clusterName: 'c1', vms: [], vmi: undefined, pvcs: [] });
    assert.equal(await readForRemoval(gone, { name: TARGET, clusterName: 'c1' }), undefined);
    const hostile = vm(TARGET, NS, [
      { name: 'a', persistentVolumeClaim: { claimName: 'x,y' } },
      { name: 'b', persistentVolumeClaim: { claimName: '../../secrets/z' } },
      boot,
    ]);
    assert.deepEqual(claimsToRead(hostile, undefined), ['m1-disk-0-abcde']);
  });
});
