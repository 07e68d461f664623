// What is on Harvester, as an operator would look at it (the Volumes and Virtual Machines
// pages): every volume the walkthrough made or saw made, with what it is and whose, and its
// state at each point of the story.
import { ANNOTATION_VOLUME_CLAIM_TEMPLATES, LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/harvester/types.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';

export interface TrackedPvc {
  name: string;
  cluster: string;
  /** "boot disk of <vm>", "hot-plugged into <vm>", "never attached". */
  what: string;
  size: string;
}

interface Pvc extends KubeObject {
  spec?: { resources?: { requests?: { storage?: string } } };
}

export type PvcState = 'present' | 'deleting' | 'gone';

/** A guest-cluster label seen on a PVC, and when. */
export interface Recorded {
  label: string;
  seenAt: number;
}

export class HarvesterView {
  readonly pvcs: TrackedPvc[] = [];

  constructor(
    private readonly admin: KubeClient,
    readonly namespace: string,
  ) {}

  track(pvc: TrackedPvc): void {
    this.pvcs.push(pvc);
  }

  /** Tracks the boot volumes a VM's volumeClaimTemplates ask for. */
  async trackBootDisks(vmName: string, cluster: string): Promise<string[]> {
    const vm = await this.admin.get<VirtualMachine & KubeObject>(Resources.virtualMachine, {
      namespace: this.namespace,
      name: vmName,
    });
    const templates = JSON.parse(
      vm.metadata.annotations?.[ANNOTATION_VOLUME_CLAIM_TEMPLATES] ?? '[]',
    ) as Array<{
      metadata: { name: string };
      spec?: { resources?: { requests?: { storage?: string } } };
    }>;
    for (const t of templates)
      this.track({
        name: t.metadata.name,
        cluster,
        what: `boot disk of ${vmName}`,
        size: t.spec?.resources?.requests?.storage ?? '',
      });
    return templates.map((t) => t.metadata.name);
  }

  /** Each PVC's state now: present, being deleted, or gone. */
  async states(): Promise<Map<string, PvcState>> {
    const list = await this.admin.list<Pvc>(Resources.pvc, { namespace: this.namespace });
    const states = new Map<string, PvcState>();
    for (const p of list.items)
      states.set(p.metadata.name, p.metadata.deletionTimestamp ? 'deleting' : 'present');
    return states;
  }

  of(cluster: string): TrackedPvc[] {
    return this.pvcs.filter((p) => p.cluster === cluster);
  }

  /** Rows for the PVC table: one column per snapshot ("before", "after", …), then the labels seen. */
  rows(snapshots: Array<Map<string, PvcState>>, labels?: Map<string, Recorded>): string[][] {
    return this.pvcs.map((p) => [
      p.name,
      p.cluster,
      p.what,
      p.size,
      ...snapshots.map((s) => {
        const state = s.get(p.name) ?? 'gone';
        return state === 'present' ? 'present' : state === 'deleting' ? 'deleting' : 'GONE';
      }),
      ...(labels ? [labels.get(p.name)?.label ?? '(none)'] : []),
    ]);
  }

  /**
   * Waits (up to `timeoutMs`) until each PVC carries its cluster's guest-cluster label, and says
   * what each carries and when that was first seen.
   */
  async waitRecorded(
    expected: Array<{ name: string; cluster: string }>,
    timeoutMs = 30_000,
  ): Promise<Map<string, Recorded>> {
    const seen = new Map<string, Recorded>();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const list = await this.admin.list<Pvc>(Resources.pvc, { namespace: this.namespace });
      for (const p of list.items) {
        const label = p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME];
        if (label !== undefined && seen.get(p.metadata.name)?.label !== label)
          seen.set(p.metadata.name, { label, seenAt: Date.now() });
      }
      if (expected.every((e) => seen.get(e.name)?.label === e.cluster) || Date.now() > deadline) return seen;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Waits until `names` are all gone (PVC deletion finishes asynchronously: finalizers). */
  async waitGone(names: string[], timeoutMs = 60_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const states = await this.states();
      const left = names.filter((n) => states.has(n));
      if (left.length === 0 || Date.now() > deadline) return left;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async vms(): Promise<
    Array<{ name: string; cluster: string; phase: string; ip: string; deleting: boolean }>
  > {
    const [vms, vmis] = await Promise.all([
      this.admin.list<VirtualMachine & KubeObject>(Resources.virtualMachine, { namespace: this.namespace }),
      this.admin.list<VirtualMachineInstance & KubeObject>(Resources.virtualMachineInstance, {
        namespace: this.namespace,
      }),
    ]);
    return vms.items.map((vm) => {
      const vmi = vmis.items.find((i) => i.metadata.name === vm.metadata.name);
      return {
        name: vm.metadata.name,
        cluster: vm.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] ?? '',
        phase: vmi?.status?.phase ?? 'no instance',
        ip: vmi?.status?.interfaces?.find((i) => i.ipAddress)?.ipAddress ?? '',
        deleting: Boolean(vm.metadata.deletionTimestamp),
      };
    });
  }

  async vm(name: string): Promise<(VirtualMachine & KubeObject) | undefined> {
    return this.admin.find<VirtualMachine & KubeObject>(Resources.virtualMachine, {
      namespace: this.namespace,
      name,
    });
  }

  /** PVC names a VM's spec mounts as hot-plugged volumes. */
  async hotplugged(vmName: string): Promise<string[]> {
    const vm = await this.vm(vmName);
    return (vm?.spec.template.spec.volumes ?? []).flatMap((v) =>
      v.persistentVolumeClaim?.hotpluggable ? [v.persistentVolumeClaim.claimName] : [],
    );
  }
}
