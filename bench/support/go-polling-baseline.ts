// The baseline for the driver benchmark: what the Go driver (docker-machine-driver-harvester
// 0b90d05, harvester/create.go and harvester.go) does for each operation, request for request,
// over the same client and the same sandbox. Its waits are mcnutils.WaitForSpecific(f, 120,
// 5 s): call f, and if it does not hold yet, sleep 5 s and try again, at most 120 times.
//   Create:  GET image (storage class), POST VM, then waitForReady, then GetIP.
//   Start:   PUT start, waitForReady.            Stop: PUT stop, waitForState(Stopped).
//   Restart: GET VMI (its uid), PUT restart, poll GET VMI until the uid differs, waitForReady.
//   Remove:  GET VM, [LIST the cluster's labelled PVCs on a whole-cluster removal], PUT VM
//            (removedPersistentVolumeClaims), DELETE VM, poll GET VM until 404.
//   waitForReady = waitForState(Running), then poll GetIP until it is not empty.
//   GetState = GET VM, GET VMI (404: Stopped; phase Running: Running).
//   GetIP    = GetState (drivers.MustBeRunning), then GET VMI: interfaces[0], IPv4 only.
// The VM itself is built by our builder from the same flags (it builds the Go driver's VM).
// waitForReady and waitRemoved are bench/go-style-waiter.ts's (the plugin bench's baseline);
// the two waits it has no form of (Stopped, a new VMI uid) are written here the same way.
import crypto from 'node:crypto';
import type { DriverConfig } from '../../src/driver/config/index.js';
import { generateSshKeyPair } from '../../src/driver/ssh-keys.js';
import {
  ANNOTATION_REMOVE_ALL_PVCS,
  ANNOTATION_REMOVED_PVCS,
  LABEL_GUEST_CLUSTER_NAME,
} from '../../src/harvester/labels.js';
import { namespacedName } from '../../src/harvester/names.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/harvester/types.js';
import { buildVirtualMachine } from '../../src/harvester/vm-spec.js';
import { KubeClient } from '../../src/kube/client.js';
import { Resources, describeOperation, resourcePath, type KubeObject } from '../../src/kube/resources.js';
import { GO_POLL_INTERVAL_MS, goStyleWaitReady, goStyleWaitRemoved } from '../go-style-waiter.js';

export { GO_POLL_INTERVAL_MS };
export const GO_POLL_TRIES = 120;

type Vm = VirtualMachine & KubeObject;
type Vmi = VirtualMachineInstance & KubeObject;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** mcnutils.WaitForSpecific: check, then sleep the interval, up to `tries` checks. */
async function waitForSpecific(
  what: string,
  check: () => Promise<boolean>,
  intervalMs: number,
  tries: number,
): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await sleep(intervalMs);
  }
  throw new Error(`too many retries waiting for ${what}. Maximum number of retries (${tries}) exceeded`);
}

export interface GoPollingOptions {
  onRequest?: (method: string, path: string) => void;
}

export class GoPollingDriver {
  private readonly client: KubeClient;
  private readonly intervalMs = GO_POLL_INTERVAL_MS;
  private readonly tries = GO_POLL_TRIES;

  constructor(
    kubeconfig: string,
    private readonly cfg: DriverConfig,
    opts: GoPollingOptions = {},
  ) {
    this.client = KubeClient.fromKubeconfig(kubeconfig, opts.onRequest ? { onRequest: opts.onRequest } : {});
  }

  private get at(): { namespace: string; name: string } {
    return { namespace: this.cfg.VMNamespace, name: this.cfg.MachineName };
  }

  private async getVm(): Promise<Vm | undefined> {
    return this.client.find<Vm>(Resources.virtualMachine, this.at);
  }

  private async getVmi(): Promise<Vmi | undefined> {
    return this.client.find<Vmi>(Resources.virtualMachineInstance, this.at);
  }

  /** GetState: 'Running', 'Stopped', 'Starting', …, or 'None' on an error (which Go logs). */
  async getState(): Promise<string> {
    try {
      if (!(await this.getVm())) return 'None';
      const vmi = await this.getVmi();
      if (!vmi) return 'Stopped';
      const phase = vmi.status?.phase ?? '';
      if (phase === 'Running') return 'Running';
      return ['Pending', 'Scheduling', 'Scheduled'].includes(phase) ? 'Starting' : 'None';
    } catch {
      return 'None';
    }
  }

  /** GetIP: the first interface's address when running and IPv4, else '' (Go: an error). */
  async getIp(): Promise<string> {
    if ((await this.getState()) !== 'Running') return '';
    const vmi = await this.getVmi().catch(() => undefined);
    const address = (vmi?.status?.interfaces?.[0]?.ipAddress ?? '').split('/')[0] ?? '';
    return /^\d+\.\d+\.\d+\.\d+$/.test(address) ? address : '';
  }

  private waitForState(state: string): Promise<void> {
    return waitForSpecific(
      `machine to be ${state}`,
      async () => (await this.getState()) === state,
      this.intervalMs,
      this.tries,
    );
  }

  private async waitForReady(): Promise<void> {
    await goStyleWaitReady(this.client, this.cfg.VMNamespace, this.cfg.MachineName);
  }

  private async subresource(action: 'start' | 'stop' | 'restart'): Promise<void> {
    const type = {
      group: 'subresources.kubevirt.io',
      version: 'v1',
      plural: 'virtualmachines',
      kind: 'VirtualMachine',
      namespaced: true,
    };
    const at = { ...this.at, subresource: action };
    await this.client.call({
      method: 'PUT',
      path: resourcePath(type, at),
      operation: describeOperation('put', type, at),
    });
  }

  async create(): Promise<string> {
    const cfg = this.cfg;
    const { publicKey } = generateSshKeyPair(); // createKeyPair: ssh.GenerateSSHKey
    const { namespace, name } = namespacedName(cfg.ImageName, cfg.VMNamespace);
    const image = await this.client.get<KubeObject & { status?: { storageClassName?: string } }>(
      Resources.virtualMachineImage,
      { namespace, name },
    );
    const built = buildVirtualMachine(cfg, {
      sshPublicKey: publicKey,
      random: () => crypto.randomBytes(5).toString('hex').slice(0, 5),
      imageStorageClass: () => image.status?.storageClassName,
    });
    await this.client.create<Vm>(Resources.virtualMachine, built.vm);
    await this.waitForReady();
    return this.getIp();
  }

  async start(): Promise<void> {
    await this.subresource('start');
    await this.waitForReady();
  }

  async stop(): Promise<void> {
    await this.subresource('stop');
    await this.waitForState('Stopped');
  }

  async restart(): Promise<void> {
    const old = await this.getVmi();
    if (!old) throw new Error('restart: no VM instance');
    await this.subresource('restart');
    await waitForSpecific(
      'machine restart',
      async () => {
        const vmi = await this.getVmi().catch(() => undefined);
        return vmi !== undefined && vmi.metadata.uid !== old.metadata.uid;
      },
      this.intervalMs,
      this.tries,
    );
    await this.waitForReady();
  }

  async remove(): Promise<void> {
    const vm = await this.getVm();
    if (!vm) return;
    // patchRemovedPVCs: the claims that are not hot-pluggable; with Rancher's whole-cluster
    // annotation every claim, and the namespace's PVCs labelled for the cluster (one LIST).
    const removeAll = vm.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS] === 'true';
    const claims = (vm.spec.template.spec.volumes ?? [])
      .filter((v) => v.persistentVolumeClaim && (removeAll || !v.persistentVolumeClaim.hotpluggable))
      .map((v) => v.persistentVolumeClaim?.claimName ?? '');
    if (removeAll) {
      const labelled = await this.client.list(Resources.pvc, {
        namespace: this.cfg.VMNamespace,
        labelSelector: `${LABEL_GUEST_CLUSTER_NAME}=${this.cfg.ClusterName}`,
      });
      for (const pvc of labelled.items)
        if (!claims.includes(pvc.metadata.name)) claims.push(pvc.metadata.name);
    }
    vm.metadata.annotations = { ...vm.metadata.annotations, [ANNOTATION_REMOVED_PVCS]: claims.join(',') };
    await this.client.update(Resources.virtualMachine, vm);
    await this.client.delete(Resources.virtualMachine, this.at, { propagationPolicy: 'Foreground' });
    await goStyleWaitRemoved(this.client, this.cfg.VMNamespace, this.cfg.MachineName);
  }

  close(): void {
    this.client.close();
  }
}
