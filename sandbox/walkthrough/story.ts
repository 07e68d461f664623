// What the walkthrough's steps share: the running world, the narrator, the view of
// Harvester, and the guest clusters made so far.
import type { GuestMachine } from '../rancher/guest-cluster.js';
import type { HarvesterView } from './harvester-view.js';
import type { Narrator } from './narrator.js';
import type { World } from './world.js';

export interface Guest {
  name: string;
  machines: GuestMachine[];
  /** Host PVCs of the guest's workloads (CSI volumes). */
  workloadPvcs: string[];
}

export class Story {
  readonly clusters = new Map<string, Guest>();
  private viewRef: HarvesterView | undefined;

  constructor(
    readonly world: World,
    readonly say: Narrator,
  ) {}

  get view(): HarvesterView {
    if (!this.viewRef) throw new Error('no view of Harvester yet');
    return this.viewRef;
  }
  set view(view: HarvesterView) {
    this.viewRef = view;
  }

  guest(name: string): Guest {
    const guest = this.clusters.get(name);
    if (!guest) throw new Error(`no guest cluster ${name}`);
    return guest;
  }

  pvcHeader(): string[] {
    return [`PVC on Harvester (namespace ${this.view.namespace})`, 'guest cluster', 'what', 'size'];
  }
}
