// Where each machine of a whole-cluster deletion waits: watches on the Machines, the
// HarvesterMachines and the VMs record, per machine, when each step of the deletion was seen
// (the cascade reaching its Machine, its VM annotated, the gate released, Cluster API deleting
// the HarvesterMachine, Rancher's rm job done and the finalizer gone, the Machine gone), and
// summarize them as the gaps between steps: what the controller takes, what Cluster API takes
// and what the stand-ins take.
import { Informer, type InformerEvent } from '../../src/kube/informer.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, resourceType, type KubeObject } from '../../src/kube/resources.js';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../src/rancher/labels.js';

export const STEPS = ['deleting', 'annotated', 'released', 'infraDeleting', 'infraGone', 'gone'] as const;
export type Step = (typeof STEPS)[number];

/** What each step means, for the printed table. */
const GAPS: Array<{ from: Step; to: Step; who: string }> = [
  { from: 'deleting', to: 'annotated', who: 'controller: cascade reached the Machine → VM annotated' },
  { from: 'annotated', to: 'released', who: 'controller: VM annotated → gate released' },
  { from: 'released', to: 'infraDeleting', who: 'Cluster API: gate released → HarvesterMachine deleted' },
  { from: 'infraDeleting', to: 'infraGone', who: 'Rancher stand-in: rm job and finalizer' },
  { from: 'infraGone', to: 'gone', who: 'Cluster API: HarvesterMachine gone → Machine gone' },
];

/** The cascade above the Machines, in the order Cluster API and the garbage collector walk it. */
const CASCADE = [
  { kind: 'Cluster', type: Resources.capiCluster },
  {
    kind: 'MachineDeployment',
    type: resourceType('cluster.x-k8s.io', 'v1beta1', 'machinedeployments', 'MachineDeployment'),
  },
  { kind: 'MachineSet', type: resourceType('cluster.x-k8s.io', 'v1beta1', 'machinesets', 'MachineSet') },
] as const;

export class DeletionTimeline {
  /** Milliseconds since start(), per machine name and step. */
  readonly seen = new Map<string, Partial<Record<Step, number>>>();
  /** Milliseconds since start() when the cascade reached each object above the Machines ("Kind/name"). */
  readonly cascade = new Map<string, number>();
  private t0 = 0;
  private readonly informers: Array<Informer<KubeObject>> = [];
  private readonly byInstance = new Map<string, string>();

  constructor(
    private readonly opts: {
      rancher: KubeClient;
      harvester: KubeClient;
      namespace: string;
      vmNamespace: string;
      cluster: string;
      hook: string;
    },
  ) {}

  /** Starts watching; `at` is the origin of every time recorded. */
  async watch(): Promise<void> {
    const { rancher, harvester, namespace, vmNamespace, cluster } = this.opts;
    const labelSelector = `${CAPI_LABEL_CLUSTER_NAME}=${cluster}`;
    const machines = new Informer<KubeObject>(rancher, Resources.capiMachine, { namespace, labelSelector });
    const infra = new Informer<KubeObject>(rancher, Resources.harvesterMachine, { namespace, labelSelector });
    const vms = new Informer<KubeObject>(harvester, Resources.virtualMachine, {
      namespace: vmNamespace,
      labelSelector: `guestcluster.harvesterhci.io/name=${cluster}`,
    });
    machines.on((e) => this.onMachine(e));
    infra.on((e) => {
      if (e.type === 'DELETED') this.mark(e.object.metadata.name, 'infraGone');
      else if (e.object.metadata.deletionTimestamp) this.mark(e.object.metadata.name, 'infraDeleting');
    });
    vms.on((e) => {
      if (e.object.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS] !== 'true') return;
      const machine = this.byInstance.get(e.object.metadata.name);
      if (machine) this.mark(machine, 'annotated');
    });
    this.informers.push(machines, infra, vms);
    for (const { kind, type } of CASCADE) {
      const informer = new Informer<KubeObject>(rancher, type, {
        namespace,
        ...(kind === 'Cluster' ? { fieldSelector: `metadata.name=${cluster}` } : { labelSelector }),
      });
      informer.on((e) => {
        const key = `${kind}/${e.object.metadata.name}`;
        if (this.t0 && e.object.metadata.deletionTimestamp && !this.cascade.has(key))
          this.cascade.set(key, performance.now() - this.t0);
      });
      this.informers.push(informer);
    }
    await Promise.all(this.informers.map((i) => i.start()));
  }

  /** The origin: the Cluster's deletion. */
  start(): void {
    this.t0 = performance.now();
  }

  private onMachine(e: InformerEvent<KubeObject>): void {
    const { name, deletionTimestamp, annotations } = e.object.metadata;
    this.byInstance.set(rancherInstanceName(name), name);
    if (e.type === 'DELETED') return this.mark(name, 'gone');
    if (!deletionTimestamp) return;
    this.mark(name, 'deleting');
    if (annotations?.[this.opts.hook] === undefined) this.mark(name, 'released');
  }

  private mark(machine: string, step: Step): void {
    if (!this.t0) return;
    const steps = this.seen.get(machine) ?? {};
    steps[step] ??= performance.now() - this.t0;
    this.seen.set(machine, steps);
  }

  /** Machines not yet gone (of those known to the watch). */
  left(): number {
    return [...this.byInstance.values()].filter((m) => this.seen.get(m)?.gone === undefined).length;
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** The step's time of every machine that reached it, sorted. */
  times(step: Step): number[] {
    return [...this.seen.values()]
      .map((s) => s[step])
      .filter((t): t is number => t !== undefined)
      .sort((a, b) => a - b);
  }

  /** The gap between two steps of each machine that reached both, sorted. */
  gaps(from: Step, to: Step): number[] {
    return [...this.seen.values()]
      .flatMap((s) => (s[from] !== undefined && s[to] !== undefined ? [s[to] - s[from]] : []))
      .sort((a, b) => a - b);
  }

  /** Lines for the report: where the time went. */
  report(): string[] {
    const lines = [
      `  the cascade above the Machines (deletion seen after the provisioning Cluster's): ${
        [...this.cascade].map(([k, t]) => `${k.replace(/\/.*/, '')} ${s(t)}`).join(', ') || '—'
      }`,
      `  step times after the Cluster's deletion (first / median / last of ${this.seen.size} machines):`,
    ];
    for (const step of STEPS) {
      const t = this.times(step);
      lines.push(
        `    ${step.padEnd(14)} ${t.length ? `${s(t[0])} / ${s(quantile(t, 0.5))} / ${s(t.at(-1))}` : '—'} (${t.length})`,
      );
    }
    lines.push('  where each machine waits (median / p90 / max):');
    for (const g of GAPS) {
      const t = this.gaps(g.from, g.to);
      lines.push(
        `    ${g.who}: ${t.length ? `${s(quantile(t, 0.5))} / ${s(quantile(t, 0.9))} / ${s(t.at(-1))}` : '—'}`,
      );
    }
    return lines;
  }
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/** Per second over the span between the first and the last time (n/span). */
export function ratePerSecond(sorted: readonly number[]): number {
  if (sorted.length < 2) return NaN;
  const span = ((sorted.at(-1) as number) - (sorted[0] as number)) / 1000;
  return span > 0 ? (sorted.length - 1) / span : Infinity;
}

const s = (ms: number | undefined): string => (ms === undefined ? '—' : `${(ms / 1000).toFixed(2)} s`);
