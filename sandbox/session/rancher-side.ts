// Rancher's side of a hand-driven sandbox, run by `sandbox up` for as long as it runs: our
// cleanup controller as its own process (as the chart runs it, log in the state directory)
// and the Cluster API + Rancher deletion stand-in whose removal job is Rancher's rm job
// with the real rancher-machine and our plugin executable. Every run of that job is kept
// for `sandbox job-logs`: one line in removals.jsonl (machine, attempt, the credential's
// token name, the VM's removeAllPersistentVolumeClaims annotation when it started, exit
// code) and its output in logs/<machine>.rm-<attempt>.log. The sandbox walkthrough plays
// the same parts (sandbox/walkthrough/world.ts); this keeps them running between commands.
import fs from 'node:fs';
import path from 'node:path';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { KubeError } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import type { Logger } from '../../src/log/logger.js';
import { redact } from '../../src/log/redact.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { startCapiStandIn, type CapiStandIn, type RemovalJob } from '../rancher/capi-standin.js';
import { jobBinaries, type JobBinaries } from '../rancher-machine/binaries.js';
import { ProvisionJobs } from '../rancher-machine/provision-jobs.js';
import { rancherMachineRemovalJob } from '../rancher-machine/removal-job.js';
import type { Sandbox } from '../sandbox.js';
import { startControllerProcess, type ControllerProcess } from '../walkthrough/controller-process.js';
import { tokenNameOf } from '../walkthrough/world.js';

export const FLEET_NAMESPACE = 'fleet-default';
export const SYSTEM_NAMESPACE = 'cattle-system';

/** One run of an rm job, as removals.jsonl keeps it (never a secret: token names only). */
export interface RemovalRecord {
  machine: string;
  cluster: string;
  instance: string;
  attempt: number;
  startedAt: string;
  /** The Rancher token in the job's HARVESTER_KUBECONFIG_CONTENT. */
  token?: string;
  /** removeAllPersistentVolumeClaims on the VM when the job started. */
  annotationAtStart?: string;
  finishedAt?: string;
  code?: number | null;
  ok?: boolean;
  log: string;
}

export const removalsFile = (dir: string): string => path.join(dir, 'rancher', 'removals.jsonl');

export function readRemovals(dir: string): RemovalRecord[] {
  let text: string;
  try {
    text = fs.readFileSync(removalsFile(dir), 'utf8');
  } catch {
    return [];
  }
  const latest = new Map<string, RemovalRecord>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line) as RemovalRecord;
      latest.set(`${r.machine}#${r.attempt}`, r);
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

export async function startRancherSide(
  sandbox: Sandbox,
  opts: { dir: string; retryDelayMs: number; logger: Logger },
): Promise<RancherSide> {
  const { rancher, harvester } = sandbox;
  for (const name of [FLEET_NAMESPACE, SYSTEM_NAMESPACE]) {
    try {
      await rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      });
    } catch (err) {
      if (!(err instanceof KubeError && err.kind === 'AlreadyExists')) throw err;
    }
  }
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
  // Built (or found in the cache) in the background: the first rm job waits for them.
  const binaries: Promise<JobBinaries> = jobBinaries((line) => opts.logger.info(`sandbox: ${line}`));
  binaries.catch((err: unknown) =>
    opts.logger.error(`sandbox: rm jobs cannot run: ${err instanceof Error ? err.message : String(err)}`),
  );
  let jobs: ProvisionJobs | undefined;
  const append = (r: RemovalRecord): void =>
    fs.appendFileSync(removalsFile(opts.dir), JSON.stringify(r) + '\n', { mode: 0o600 });

  const removalJob: RemovalJob = async (ctx) => {
    const machine = ctx.harvesterMachine.metadata.name ?? '';
    const instance = rancherInstanceName(machine);
    const vm = await harvester.admin.find<KubeObject>(Resources.virtualMachine, {
      namespace: ctx.harvesterMachine.spec?.vmNamespace ?? '',
      name: instance,
    });
    const token = tokenNameOf(ctx.env.HARVESTER_KUBECONFIG_CONTENT);
    const annotation = vm?.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS];
    const record: RemovalRecord = {
      machine,
      cluster: ctx.harvesterMachine.metadata.labels?.['cluster.x-k8s.io/cluster-name'] ?? '',
      instance,
      attempt: ctx.attempt,
      startedAt: new Date().toISOString(),
      ...(token ? { token } : {}),
      ...(annotation !== undefined ? { annotationAtStart: annotation } : {}),
      log: path.join(logs, `${machine}.rm-${ctx.attempt}.log`),
    };
    append(record);
    const b = await binaries;
    jobs ??= new ProvisionJobs({
      // The create jobs' root (session/cluster-commands.ts): the state Secret's tar holds the
      // absolute path of the store, so every job of a machine runs in the same "pod" home.
      root: path.join(opts.dir, 'jobs'),
      rancherMachine: b.rancherMachine,
      pluginExecutable: b.plugin,
      rancherKubeconfig: sandbox.kubeconfigs.rancherLocal,
    });
    const rm = rancherMachineRemovalJob(jobs, {
      onRun: (run) => {
        fs.writeFileSync(record.log, redact(run.run.output), { mode: 0o600 });
        append({ ...record, finishedAt: new Date().toISOString(), code: run.run.code, ok: run.ok });
      },
    });
    await rm(ctx);
  };
  const standIn: CapiStandIn = await startCapiStandIn(rancher.admin, {
    namespace: FLEET_NAMESPACE,
    removalJob,
    retryDelayMs: opts.retryDelayMs,
    logger: opts.logger.child({ component: 'capi-standin' }),
  });
  return {
    controller,
    async stop() {
      jobs?.close();
      await Promise.race([standIn.stop(), new Promise((r) => setTimeout(r, 5_000).unref())]);
      await controller.stop().catch(() => undefined);
      jobs?.killLeftovers();
    },
  };
}
