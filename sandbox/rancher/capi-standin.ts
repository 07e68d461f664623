// The parts of Cluster API and Rancher's machine provisioning that a Rancher local cluster
// runs, as far as deletion goes (docs/upstream/rancher.md#removal-finalizer,
// docs/upstream/cluster-api.md#deletion-of-a-machine):
// - a provisioning Cluster being deleted deletes its CAPI Cluster, and keeps its finalizer
//   until that and the cluster's Machines are gone;
// - a CAPI Cluster being deleted deletes its Machines;
// - a CAPI Machine being deleted waits while any pre-terminate hook annotation is on it,
//   then deletes its infrastructure machine (the HarvesterMachine) and waits for it;
// - a HarvesterMachine being deleted runs the removal job (Rancher's `rm` Job) with the
//   credential read when the job is built, retried like backoffLimit 3, and keeps its
//   finalizer until a run succeeded (or the job failed and force-machine-remove is set).
// The removal job is pluggable; the default runs the driver in process (removal-job.ts).
import { Informer, KubeError, WorkQueue, objectKey, type KubeClient } from '../../src/kube/index.js';
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import {
  CAPI_LABEL_CLUSTER_NAME,
  PRE_TERMINATE_HOOK_PREFIX,
  RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE,
  RANCHER_FINALIZER_MACHINE_PROVISION_REMOVE,
} from '../../src/rancher/labels.js';
import { driverRemovalJob } from './removal-job.js';

export const FINALIZER_PROVISIONING_CLUSTER = 'wrangler.cattle.io/provisioning-cluster-remove';
export const FINALIZER_CAPI_CLUSTER = 'cluster.cluster.x-k8s.io';
export const FINALIZER_CAPI_MACHINE = 'machine.cluster.x-k8s.io';
export const FINALIZER_HARVESTER_MACHINE = RANCHER_FINALIZER_MACHINE_PROVISION_REMOVE;

export interface StandInMachine extends KubeObject {
  spec?: { clusterName?: string; infrastructureRef?: { name?: string; namespace?: string } };
}
export interface StandInHarvesterMachine extends KubeObject {
  spec?: { vmNamespace?: string | null; common?: { cloudCredentialSecretName?: string | null } | null };
  status?: Record<string, unknown>;
}
interface ProvisioningCluster extends KubeObject {
  spec?: { cloudCredentialSecretName?: string | null };
}

export interface RemovalJobContext {
  harvesterMachine: StandInHarvesterMachine;
  /** The job pod's environment: HARVESTER_KUBECONFIG_CONTENT, HARVESTER_CLUSTER_ID, HARVESTER_CLUSTER_TYPE. */
  env: Record<string, string>;
  /** 1 for the first run, up to 1 + backoffLimit. */
  attempt: number;
}
export type RemovalJob = (ctx: RemovalJobContext) => Promise<void>;

export interface RemovalRun {
  machine: string;
  attempt: number;
  credential: string | undefined;
  startedAt: number;
  ok?: boolean;
  error?: string;
}

export interface CapiStandInOptions {
  /** Namespace of the clusters and machines (default: all). */
  namespace?: string;
  /** Default: the driver in process (removal-job.ts), as Rancher's rm Job runs it. */
  removalJob?: RemovalJob;
  /** Retries after a failed run, as the rm Job's backoffLimit (3). */
  backoffLimit?: number;
  /** Pause between runs (Kubernetes' Job backoff starts at 10 s; short here). */
  retryDelayMs?: number;
  logger?: Logger;
}

export interface CapiStandIn {
  /** Every removal run, in order: tests read what ran, when, and with which credential. */
  readonly runs: RemovalRun[];
  stop(): Promise<void>;
}

/** Rancher's env name for a credential key: `harvestercredentialConfig-kubeconfigContent` → HARVESTER_KUBECONFIG_CONTENT. */
export function credentialEnvName(key: string, driver = 'harvester'): string {
  const field = key.slice(key.lastIndexOf('-') + 1);
  return `${driver}_${field.replace(/([a-z])([A-Z])/g, '$1_$2')}`.toUpperCase();
}

export function credentialEnv(data: Record<string, string> | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(data ?? {}))
    env[credentialEnvName(k)] = Buffer.from(v, 'base64').toString('utf8');
  return env;
}

const deleting = (o: KubeObject | undefined): boolean => Boolean(o?.metadata.deletionTimestamp);
const has = (o: KubeObject, finalizer: string): boolean => (o.metadata.finalizers ?? []).includes(finalizer);

export async function startCapiStandIn(
  rancher: KubeClient,
  options: CapiStandInOptions,
): Promise<CapiStandIn> {
  const logger = options.logger ?? silentLogger;
  const scope = options.namespace !== undefined ? { namespace: options.namespace } : {};
  const informer = <T extends KubeObject>(type: ResourceType): Informer<T> =>
    new Informer<T>(rancher, type, { ...scope, logger });
  const provisioning = informer<ProvisioningCluster>(Resources.provisioningCluster);
  const clusters = informer<KubeObject>(Resources.capiCluster);
  const machines = informer<StandInMachine>(Resources.capiMachine);
  const infra = informer<StandInHarvesterMachine>(Resources.harvesterMachine);
  const runs: RemovalRun[] = [];
  const jobs = new Map<string, { done: boolean; ok: boolean; promise: Promise<void> }>();
  const backoffLimit = options.backoffLimit ?? 3;
  const removalJob = options.removalJob ?? driverRemovalJob(rancher, logger);

  /** Removes one finalizer, conditional on the resourceVersion it was read at (no lost update). */
  const removeFinalizer = async (type: ResourceType, o: KubeObject, finalizer: string): Promise<void> => {
    try {
      await rancher.patch(
        type,
        { namespace: o.metadata.namespace ?? '', name: o.metadata.name ?? '' },
        {
          metadata: {
            resourceVersion: o.metadata.resourceVersion,
            finalizers: (o.metadata.finalizers ?? []).filter((f) => f !== finalizer),
          },
        },
      );
    } catch (err) {
      if (!(err instanceof KubeError && err.kind === 'NotFound')) throw err;
    }
  };
  const del = async (type: ResourceType, o: KubeObject): Promise<void> => {
    await rancher.delete(type, { namespace: o.metadata.namespace ?? '', name: o.metadata.name ?? '' });
  };
  const machinesOf = (ns: string, cluster: string): StandInMachine[] =>
    machines.list(
      (m) =>
        m.metadata.namespace === ns &&
        (m.spec?.clusterName ?? m.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME]) === cluster,
    );

  const provisioningQueue = new WorkQueue(
    async (key) => {
      const pc = provisioning.get(key);
      if (!pc || !deleting(pc) || !has(pc, FINALIZER_PROVISIONING_CLUSTER)) return;
      const capi = clusters.get(key);
      if (capi && !deleting(capi)) await del(Resources.capiCluster, capi);
      if (capi || machinesOf(pc.metadata.namespace ?? '', pc.metadata.name ?? '').length) return;
      await removeFinalizer(Resources.provisioningCluster, pc, FINALIZER_PROVISIONING_CLUSTER);
    },
    { logger, baseDelayMs: 100, maxDelayMs: 2000 },
  );

  const clusterQueue = new WorkQueue(
    async (key) => {
      const c = clusters.get(key);
      if (!c || !deleting(c) || !has(c, FINALIZER_CAPI_CLUSTER)) return;
      const own = machinesOf(c.metadata.namespace ?? '', c.metadata.name ?? '');
      for (const m of own) if (!deleting(m)) await del(Resources.capiMachine, m);
      if (own.length === 0) await removeFinalizer(Resources.capiCluster, c, FINALIZER_CAPI_CLUSTER);
    },
    { logger, baseDelayMs: 100, maxDelayMs: 2000 },
  );

  const machineQueue = new WorkQueue(
    async (key) => {
      const m = machines.get(key);
      if (!m || !deleting(m) || !has(m, FINALIZER_CAPI_MACHINE)) return;
      // Cluster API's reconcileDelete: every pre-terminate hook must be gone before the
      // infrastructure is touched.
      if (Object.keys(m.metadata.annotations ?? {}).some((k) => k.startsWith(PRE_TERMINATE_HOOK_PREFIX)))
        return;
      const ref = m.spec?.infrastructureRef;
      const hm = ref?.name
        ? infra.get(`${ref.namespace ?? m.metadata.namespace ?? ''}/${ref.name}`)
        : undefined;
      if (hm && !deleting(hm)) await del(Resources.harvesterMachine, hm);
      if (!hm) await removeFinalizer(Resources.capiMachine, m, FINALIZER_CAPI_MACHINE);
    },
    { logger, baseDelayMs: 100, maxDelayMs: 2000 },
  );

  /** What Rancher's machineprovision does when it builds the rm Job: read the credential now. */
  const buildEnv = async (
    hm: StandInHarvesterMachine,
  ): Promise<{ env: Record<string, string>; credential: string | undefined }> => {
    const ns = hm.metadata.namespace ?? '';
    const pc = provisioning.get(`${ns}/${hm.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME] ?? ''}`);
    const ref =
      hm.spec?.common?.cloudCredentialSecretName ||
      pc?.spec?.cloudCredentialSecretName ||
      (hm.status?.cloudCredentialSecretName as string | undefined);
    if (!ref) return { env: {}, credential: undefined };
    const colon = ref.indexOf(':');
    const at =
      colon > 0
        ? { namespace: ref.slice(0, colon), name: ref.slice(colon + 1) }
        : { namespace: ns, name: ref };
    const secret = await rancher.get<KubeObject & { data?: Record<string, string> }>(Resources.secret, at);
    return { env: credentialEnv(secret.data), credential: ref };
  };

  const runRemoval = async (key: string): Promise<boolean> => {
    for (let attempt = 1; attempt <= 1 + backoffLimit; attempt++) {
      const hm = infra.get(key);
      if (!hm) return true;
      const run: RemovalRun = { machine: key, attempt, credential: undefined, startedAt: Date.now() };
      runs.push(run);
      try {
        const { env, credential } = await buildEnv(hm);
        run.credential = credential;
        await removalJob({ harvesterMachine: hm, env, attempt });
        run.ok = true;
        return true;
      } catch (err) {
        run.ok = false;
        run.error = err instanceof Error ? err.message : String(err);
        logger.warn('removal job failed', { machine: key, attempt, error: run.error });
        if (attempt <= backoffLimit) await new Promise((r) => setTimeout(r, options.retryDelayMs ?? 500));
      }
    }
    return false;
  };

  const infraQueue = new WorkQueue(
    async (key) => {
      const hm = infra.get(key);
      if (!hm || !deleting(hm) || !has(hm, FINALIZER_HARVESTER_MACHINE)) return;
      const job = jobs.get(key);
      if (!job) {
        const entry = { done: false, ok: false, promise: Promise.resolve() };
        entry.promise = runRemoval(key).then((ok) => {
          Object.assign(entry, { done: true, ok });
          infraQueue.add(key);
        });
        jobs.set(key, entry);
        return;
      }
      if (!job.done) return;
      if (job.ok || hm.metadata.annotations?.[RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE] === 'true') {
        await removeFinalizer(Resources.harvesterMachine, hm, FINALIZER_HARVESTER_MACHINE);
        return;
      }
      await recordFailure(hm, runs.filter((r) => r.machine === key).pop()?.error ?? 'unknown error');
    },
    { logger, baseDelayMs: 100, maxDelayMs: 2000 },
  );

  /** As Rancher shows it: the infra machine's failure fields, the CAPI Machine's message. */
  const recordFailure = async (hm: StandInHarvesterMachine, error: string): Promise<void> => {
    const ns = hm.metadata.namespace ?? '';
    const message = `failed deleting server [${ns}/${hm.metadata.name ?? ''}] of kind (HarvesterMachine) for machine ${hm.metadata.name ?? ''} in infrastructure provider: DeleteError: ${error}`;
    if (hm.status?.failureMessage === message) return;
    await rancher.update(
      Resources.harvesterMachine,
      { ...hm, status: { ...hm.status, failureReason: 'DeleteError', failureMessage: message } },
      'status',
    );
  };

  provisioning.on((e) => provisioningQueue.add(objectKey(e.object)));
  clusters.on((e) => {
    clusterQueue.add(objectKey(e.object));
    provisioningQueue.add(objectKey(e.object));
  });
  machines.on((e) => {
    machineQueue.add(objectKey(e.object));
    const ns = e.object.metadata.namespace ?? '';
    const cluster = e.object.spec?.clusterName ?? '';
    clusterQueue.add(`${ns}/${cluster}`);
    provisioningQueue.add(`${ns}/${cluster}`);
  });
  infra.on((e) => {
    infraQueue.add(objectKey(e.object));
    const ns = e.object.metadata.namespace ?? '';
    for (const m of machines.list(
      (m) => m.metadata.namespace === ns && m.spec?.infrastructureRef?.name === e.object.metadata.name,
    ))
      machineQueue.add(objectKey(m));
  });
  await Promise.all([provisioning.start(), clusters.start(), machines.start(), infra.start()]);

  return {
    runs,
    stop: async () => {
      await Promise.all([
        provisioningQueue.stop(),
        clusterQueue.stop(),
        machineQueue.stop(),
        infraQueue.stop(),
      ]);
      await Promise.all([...jobs.values()].map((j) => j.promise));
      await Promise.all([provisioning.stop(), clusters.stop(), machines.stop(), infra.stop()]);
    },
  };
}
