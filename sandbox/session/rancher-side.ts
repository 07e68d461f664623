// Rancher's side of a hand-driven sandbox, run by `sandbox up` for as long as it runs, beside
// the real Cluster API manager (sandbox/capi) that `up` starts on Rancher's local cluster: our
// cleanup controller as its own process (as the chart runs it, log in the state directory) and
// Rancher's stand-in (sandbox/rancher/rancher-standin.ts), whose create and rm jobs are
// Rancher's jobs with the real rancher-machine and our plugin executable. Every run of a job
// is kept for `sandbox create-cluster` and `sandbox job-logs`: one line in jobs.jsonl (kind,
// machine, attempt, the credential's token name, for rm the VM's
// removeAllPersistentVolumeClaims annotation when it started, exit code) and its output in
// logs/<machine>.<kind>-<attempt>.log. The sandbox walkthrough plays the same parts
// (sandbox/walkthrough/world.ts); this keeps them running between commands.
import fs from 'node:fs';
import path from 'node:path';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import type { Logger } from '../../src/log/logger.js';
import { redact } from '../../src/log/redact.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import {
  startRancherStandIn,
  type CreateJob,
  type JobContext,
  type RancherStandIn,
  type RemovalJob,
} from '../rancher/rancher-standin.js';
import { jobBinaries, type JobBinaries } from '../rancher-machine/binaries.js';
import { ProvisionJobs } from '../rancher-machine/provision-jobs.js';
import { poolConfig } from '../rancher-machine/rancher-job.js';
import { redactArgs, runProblem } from '../rancher-machine/rancher-machine.js';
import { rancherMachineRemovalJob } from '../rancher-machine/removal-job.js';
import type { Sandbox } from '../sandbox.js';
import { startControllerProcess, type ControllerProcess } from '../walkthrough/controller-process.js';
import { tokenNameOf } from '../walkthrough/world.js';
import { writePrivate } from './state.js';

export const FLEET_NAMESPACE = 'fleet-default';
export const SYSTEM_NAMESPACE = 'cattle-system';

/** One run of a create or rm job, as jobs.jsonl keeps it (never a secret: token names only). */
export interface JobRecord {
  kind: 'create' | 'rm';
  machine: string;
  cluster: string;
  instance: string;
  attempt: number;
  startedAt: string;
  /** The Rancher token in the job's HARVESTER_KUBECONFIG_CONTENT. */
  token?: string;
  /** The job environment's variable names (never their values). */
  envNames?: string[];
  /** rm: removeAllPersistentVolumeClaims on the VM when the job started. */
  annotationAtStart?: string;
  /** rancher-machine's command line, redacted. */
  command?: string;
  finishedAt?: string;
  code?: number | null;
  ok?: boolean;
  durationMs?: number;
  log: string;
}

export const jobsFile = (dir: string): string => path.join(dir, 'rancher', 'jobs.jsonl');
export const binariesFile = (dir: string): string => path.join(dir, 'rancher', 'binaries.json');

/** The jobs' binaries once `up` has them (undefined while they are built). */
export function readBinaries(dir: string): JobBinaries | { error: string } | undefined {
  try {
    return JSON.parse(fs.readFileSync(binariesFile(dir), 'utf8')) as JobBinaries | { error: string };
  } catch {
    return undefined;
  }
}

/** The latest line of every run (a run is written when it starts and again when it ends). */
export function readJobs(dir: string): JobRecord[] {
  let text: string;
  try {
    text = fs.readFileSync(jobsFile(dir), 'utf8');
  } catch {
    return [];
  }
  const latest = new Map<string, JobRecord>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line) as JobRecord;
      latest.set(`${r.kind}#${r.machine}#${r.attempt}`, r);
    } catch {
      // a line still being written
    }
  }
  return [...latest.values()];
}

export interface RancherSide {
  controller: ControllerProcess;
  stop(): Promise<void>;
}

/** Creates the namespaces that are not there yet. */
async function ensureNamespaces(admin: KubeClient, names: string[]): Promise<void> {
  for (const name of names) {
    try {
      await admin.create(Resources.namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
}

/**
 * The jobs' binaries, built (or found in the cache) in the background: the first job waits for
 * them. binaries.json says which, once they are there (`create-cluster` waits for it).
 */
function buildBinariesInBackground(dir: string, logger: Logger): Promise<JobBinaries> {
  const binaries: Promise<JobBinaries> = jobBinaries((line) => logger.info(`sandbox: ${line}`));
  const announce = (what: JobBinaries | { error: string }): void => {
    try {
      writePrivate(binariesFile(dir), JSON.stringify(what));
    } catch {
      // stopped meanwhile: the state directory is gone
    }
  };
  binaries.then(announce, (err: unknown) => {
    const error = `create and rm jobs cannot run: ${err instanceof Error ? err.message : String(err)}`;
    logger.error(`sandbox: ${error}`);
    announce({ error });
  });
  return binaries;
}

/** What a job run's outcome is made of. */
interface JobResult {
  args: string[];
  run: { output: string; code: number | null; durationMs: number };
}

/** Keeps every run of a job in jobs.jsonl (when it starts and when it ends) and its output in logs/. */
function jobLedger(
  dir: string,
  logs: string,
): {
  append: (r: JobRecord) => void;
  started: (kind: JobRecord['kind'], ctx: JobContext) => JobRecord;
  finished: (record: JobRecord, result: JobResult, ok: boolean) => void;
} {
  const append = (r: JobRecord): void =>
    fs.appendFileSync(jobsFile(dir), JSON.stringify(r) + '\n', { mode: 0o600 });
  const started = (kind: JobRecord['kind'], ctx: JobContext): JobRecord => {
    const machine = ctx.harvesterMachine.metadata.name;
    const token = tokenNameOf(ctx.env.HARVESTER_KUBECONFIG_CONTENT);
    return {
      kind,
      machine,
      cluster: ctx.clusterName,
      instance: rancherInstanceName(machine),
      attempt: ctx.attempt,
      startedAt: new Date().toISOString(),
      ...(token ? { token } : {}),
      envNames: Object.keys(ctx.env).sort(),
      log: path.join(logs, `${machine}.${kind}-${ctx.attempt}.log`),
    };
  };
  const finished = (record: JobRecord, result: JobResult, ok: boolean): void => {
    fs.writeFileSync(record.log, redact(result.run.output), { mode: 0o600 });
    append({
      ...record,
      command: `rancher-machine ${redactArgs(result.args)}`,
      finishedAt: new Date().toISOString(),
      code: result.run.code,
      ok,
      durationMs: result.run.durationMs,
    });
  };
  return { append, started, finished };
}

/**
 * Starts Rancher's side: the cleanup controller as its own process and Rancher's stand-in,
 * whose create and rm jobs run rancher-machine with our plugin, every run kept in the state directory.
 */
export async function startRancherSide(
  sandbox: Sandbox,
  opts: { dir: string; retryDelayMs: number; logger: Logger },
): Promise<RancherSide> {
  const { rancher, harvester } = sandbox;
  await ensureNamespaces(rancher.admin, [FLEET_NAMESPACE, SYSTEM_NAMESPACE]);
  const root = path.join(opts.dir, 'rancher');
  const logs = path.join(root, 'logs');
  fs.mkdirSync(logs, { recursive: true, mode: 0o700 });
  const controllerDir = path.join(opts.dir, 'controller');
  fs.mkdirSync(controllerDir, { recursive: true, mode: 0o700 });
  const controller = startControllerProcess({
    dir: controllerDir,
    rancherKubeconfig: sandbox.kubeconfigs.rancherLocal,
    namespace: FLEET_NAMESPACE,
    systemNamespace: SYSTEM_NAMESPACE,
  });
  const binaries = buildBinariesInBackground(opts.dir, opts.logger);
  let jobsRef: ProvisionJobs | undefined;
  const jobs = async (): Promise<ProvisionJobs> => {
    const b = await binaries;
    // One root for every job: the state Secret's tar holds the absolute path of the store,
    // so every job of a machine runs in the same "pod" home.
    jobsRef ??= new ProvisionJobs({
      root: path.join(opts.dir, 'jobs'),
      rancherMachine: b.rancherMachine,
      pluginExecutable: b.plugin,
      rancherKubeconfig: sandbox.kubeconfigs.rancherLocal,
    });
    return jobsRef;
  };
  const { append, started, finished } = jobLedger(opts.dir, logs);

  // Rancher's create job: rancher-machine create with the pool's config; the guest node's
  // address is the VM's, as the node reports it.
  const createJob: CreateJob = async (ctx) => {
    const record = started('create', ctx);
    append(record);
    const result = await (
      await jobs()
    ).create({
      namespace: FLEET_NAMESPACE,
      machineName: record.machine,
      instanceName: record.instance,
      env: ctx.env,
      clusterName: ctx.clusterName,
      config: poolConfig(sandbox.seeds),
    });
    const problem = runProblem(result.run);
    finished(record, result, problem === undefined);
    if (problem) throw new Error(redact(`rancher-machine create ${problem}\n${result.run.output}`));
    const vmi = await harvester.admin.find<
      KubeObject & { status?: { interfaces?: Array<{ ipAddress?: string }> } }
    >(Resources.virtualMachineInstance, { namespace: sandbox.seeds.namespace, name: record.instance });
    const ip = vmi?.status?.interfaces?.find((i) => i.ipAddress)?.ipAddress;
    return ip ? { addresses: [{ type: 'InternalIP', address: ip }] } : {};
  };

  const removalJob: RemovalJob = async (ctx) => {
    const record = started('rm', ctx);
    const vm = await harvester.admin.find<KubeObject>(Resources.virtualMachine, {
      namespace: ctx.harvesterMachine.spec?.vmNamespace ?? '',
      name: record.instance,
    });
    const annotation = vm?.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS];
    if (annotation !== undefined) record.annotationAtStart = annotation;
    append(record);
    const rm = rancherMachineRemovalJob(await jobs(), {
      onRun: (run) => finished(record, run, run.ok),
    });
    await rm(ctx);
  };
  const standIn: RancherStandIn = await startRancherStandIn(rancher.admin, {
    namespace: FLEET_NAMESPACE,
    createJob,
    removalJob,
    retryDelayMs: opts.retryDelayMs,
    // Each guest cluster its own apiserver, on Rancher's etcd (sandbox/control-plane/guest-apiserver.ts).
    guestApiservers: { etcdUrl: rancher.etcdUrl },
    logger: opts.logger.child({ component: 'rancher-standin' }),
  });
  return {
    controller,
    async stop() {
      jobsRef?.close();
      // A removal job the stand-in is retrying may be sleeping out its backoff: not worth waiting for.
      await Promise.race([standIn.stop(), new Promise((r) => setTimeout(r, 5_000).unref())]);
      await controller.stop().catch(() => undefined);
      jobsRef?.killLeftovers();
    },
  };
}
