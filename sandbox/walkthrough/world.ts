// Everything the walkthrough runs, started step by step and stopped in reverse order, also
// on failure or interrupt: the sandbox (Harvester + Rancher's local cluster with the real
// Cluster API manager + front proxy), the two binaries (real rancher-machine, our plugin
// executable), the cleanup controller process, Rancher's stand-in whose create and rm jobs
// are Rancher's jobs with rancher-machine, and a temp directory for the jobs' "pods". A
// synchronous last resort (process exit, signals) kills the jobs' plugins and removes the
// temp directory.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { onExitCleanup } from '../control-plane/processes.js';
import {
  startRancherStandIn,
  type CreateJob,
  type RancherStandIn,
  type RemovalJob,
} from '../rancher/rancher-standin.js';
import { jobBinaries, type JobBinaries } from '../rancher-machine/binaries.js';
import { ProvisionJobs, type JobResult } from '../rancher-machine/provision-jobs.js';
import { machineSpecConfig, poolConfig } from '../rancher-machine/rancher-job.js';
import { runProblem } from '../rancher-machine/rancher-machine.js';
import { rancherMachineRemovalJob, type RemovalJobRun } from '../rancher-machine/removal-job.js';
import { redact } from '../../src/log/redact.js';
import { startSandbox, type Sandbox } from '../sandbox.js';
import { startControllerProcess, type ControllerProcess } from './controller-process.js';

/** Rancher's namespace for downstream clusters and their machines. */
export const FLEET_NS = 'fleet-default';
/** Where the controller's Lease and status ConfigMap live (the chart's release namespace). */
export const SYSTEM_NS = 'cattle-system';

/** One run of Rancher's rm job, with what the VM looked like when it started. */
export interface RemovalRecord {
  machineName: string;
  attempt: number;
  startedAt: number;
  /** The VM's removeAllPersistentVolumeClaims annotation when the job started. */
  annotationAtStart: string | undefined;
  /** The Rancher token in the job's HARVESTER_KUBECONFIG_CONTENT (its name, never its secret). */
  tokenName: string | undefined;
  result?: RemovalJobRun;
}

/** One run of Rancher's create job. */
export interface CreateRecord {
  machineName: string;
  instanceName: string;
  clusterName: string;
  /** The environment's variable names (never their values). */
  envNames: string[];
  result: JobResult;
}

/** The token name in a Rancher kubeconfig ("<name>:<secret>"). */
export function tokenNameOf(kubeconfig: string | undefined): string | undefined {
  if (!kubeconfig) return undefined;
  const doc = parse(kubeconfig) as { users?: Array<{ user?: { token?: string } }> } | null;
  return doc?.users?.[0]?.user?.token?.split(':')[0];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

export class World {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-walkthrough-'));
  readonly removals: RemovalRecord[] = [];
  readonly creates: CreateRecord[] = [];
  private sandboxRef: Sandbox | undefined;
  private jobsRef: ProvisionJobs | undefined;
  private controllerRef: ControllerProcess | undefined;
  private standInRef: RancherStandIn | undefined;
  private readonly forgetExitCleanup: () => void;
  private stopping: Promise<void> | undefined;
  binaries: JobBinaries = { rancherMachine: '', plugin: '' };

  constructor() {
    this.forgetExitCleanup = onExitCleanup(() => {
      this.jobsRef?.killLeftovers();
      fs.rmSync(this.dir, { recursive: true, force: true });
    });
  }

  get sandbox(): Sandbox {
    if (!this.sandboxRef) throw new Error('the sandbox is not started');
    return this.sandboxRef;
  }
  get jobs(): ProvisionJobs {
    if (!this.jobsRef) throw new Error('the jobs are not set up');
    return this.jobsRef;
  }
  get controller(): ControllerProcess {
    if (!this.controllerRef) throw new Error('the controller is not started');
    return this.controllerRef;
  }
  get standIn(): RancherStandIn {
    if (!this.standInRef) throw new Error("Rancher's stand-in is not started");
    return this.standInRef;
  }

  /**
   * The sandbox (Harvester v1.8.0's own webhook and controllers serve it, docs/decisions/0023)
   * and the two binaries (built on first use, then cached), at once.
   */
  async startSandbox(note: (line: string) => void): Promise<void> {
    // Both settle before either failure is reported, so a sandbox that did start is stopped.
    const [started, built] = await Promise.allSettled([
      startSandbox({ clusterApi: { namespace: FLEET_NS } }).then((s) => (this.sandboxRef = s)),
      jobBinaries(note),
    ]);
    if (started.status === 'rejected') throw started.reason;
    if (built.status === 'rejected') throw built.reason;
    const [sandbox, binaries] = [started.value, built.value];
    this.binaries = binaries;
    this.jobsRef = new ProvisionJobs({
      root: path.join(this.dir, 'pods'),
      rancherMachine: binaries.rancherMachine,
      pluginExecutable: binaries.plugin,
      rancherKubeconfig: sandbox.kubeconfigs.rancherLocal,
    });
  }

  /** The controller process and Rancher's stand-in, on Rancher's local cluster. */
  async startRancherSide(retryDelayMs: number): Promise<void> {
    const { rancher, harvester } = this.sandbox;
    for (const name of [FLEET_NS, SYSTEM_NS])
      await rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      });
    this.controllerRef = startControllerProcess({
      dir: this.dir,
      rancherKubeconfig: this.sandbox.kubeconfigs.rancherLocal,
      namespace: FLEET_NS,
      systemNamespace: SYSTEM_NS,
    });
    const rm = rancherMachineRemovalJob(this.jobs, {
      onRun: (run) => {
        const record = this.removals.find(
          (r) => r.machineName === run.machineName && r.attempt === run.context.attempt,
        );
        if (record) record.result = run;
      },
    });
    const removalJob: RemovalJob = async (ctx) => {
      const machineName = ctx.harvesterMachine.metadata.name;
      const vm = await harvester.admin.find<KubeObject>(Resources.virtualMachine, {
        namespace: ctx.harvesterMachine.spec?.vmNamespace ?? '',
        name: rancherInstanceName(machineName),
      });
      this.removals.push({
        machineName,
        attempt: ctx.attempt,
        startedAt: Date.now(),
        annotationAtStart: vm?.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS],
        tokenName: tokenNameOf(ctx.env.HARVESTER_KUBECONFIG_CONTENT),
      });
      await rm(ctx);
    };
    // Rancher's create job: rancher-machine create with the pool's config; the guest node's
    // address is the VM's, as the node reports it.
    const createJob: CreateJob = async ({ harvesterMachine, env, clusterName }) => {
      const machineName = harvesterMachine.metadata.name;
      const instanceName = rancherInstanceName(machineName);
      const result = await this.jobs.create({
        namespace: FLEET_NS,
        machineName,
        instanceName,
        env,
        clusterName,
        config: { ...poolConfig(this.sandbox.seeds), ...machineSpecConfig(harvesterMachine.spec) },
      });
      this.creates.push({
        machineName,
        instanceName,
        clusterName,
        envNames: Object.keys(env).sort(),
        result,
      });
      const problem = runProblem(result.run);
      if (problem) throw new Error(redact(`rancher-machine create ${problem}\n${result.run.output}`));
      const vmi = await harvester.admin.find<
        KubeObject & { status?: { interfaces?: Array<{ ipAddress?: string }> } }
      >(Resources.virtualMachineInstance, { namespace: this.sandbox.seeds.namespace, name: instanceName });
      const ip = vmi?.status?.interfaces?.find((i) => i.ipAddress)?.ipAddress;
      return ip ? { addresses: [{ type: 'InternalIP', address: ip }] } : {};
    };
    this.standInRef = await startRancherStandIn(rancher.admin, {
      namespace: FLEET_NS,
      createJob,
      removalJob,
      retryDelayMs,
      guestApiservers: { etcdUrl: rancher.etcdUrl },
    });
  }

  /** Plugin processes the jobs left running (none expected once no job runs). */
  leftoverPlugins(): number {
    return this.jobsRef?.leftoverPlugins() ?? 0;
  }

  /** Resolves true when there was one to stop. */
  async stopStandIn(): Promise<boolean> {
    const standIn = this.standInRef;
    this.standInRef = undefined;
    await standIn?.stop();
    return standIn !== undefined;
  }

  /** Resolves with the controller's exit code (0 after a clean SIGTERM shutdown). */
  async stopController(): Promise<number | string | undefined> {
    const controller = this.controllerRef;
    this.controllerRef = undefined;
    return controller?.stop();
  }

  /** Resolves true when there was one to stop. */
  async stopSandbox(): Promise<boolean> {
    const sandbox = this.sandboxRef;
    this.sandboxRef = undefined;
    await sandbox?.stop();
    return sandbox !== undefined;
  }

  /** Stops whatever is still running, newest first, and removes the temp directory; idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.jobsRef?.close();
      // A removal job the stand-in is retrying may be sleeping out its backoff: not worth waiting for.
      await Promise.race([this.stopStandIn().catch(() => undefined), sleep(5_000)]);
      await this.stopController().catch(() => undefined);
      await this.stopSandbox().catch(() => undefined);
      this.jobsRef?.killLeftovers();
      fs.rmSync(this.dir, { recursive: true, force: true });
      this.forgetExitCleanup();
    })();
    return this.stopping;
  }
}
