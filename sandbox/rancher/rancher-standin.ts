// Rancher's side of a guest cluster's life, where Rancher's own code runs beside Cluster API
// (which runs for real: sandbox/capi): what stays a stand-in is only what rancher/rancher does.
// - provisioning Cluster removal (`wrangler.cattle.io/provisioning-cluster-remove`): delete the
//   CAPI Cluster, keep the finalizer until Cluster API has removed it;
// - the bootstrap provider: each RKEBootstrap gets its bootstrap Secret, status.ready and
//   status.dataSecretName (Rancher's RKEBootstrap controller);
// - the infrastructure cluster and control plane (RKECluster, RKEControlPlane): ready, the
//   control plane initialized, as soon as they exist (the guest's control plane is not played);
// - machine provisioning of each HarvesterMachine (machine-provision.ts): the create job, the
//   guest node's registration and the readiness Cluster API reads, and `machine-provision-remove`
//   starting Rancher's rm job when Cluster API deletes the HarvesterMachine.
// Jobs are pluggable: by default the create job saves a driver config in `<m>-machine-state`
// as if the driver had created the VM (the test creates it), and the rm job runs the driver in
// process (removal-job.ts); the walkthrough plugs in the real rancher-machine.
import type { DriverConfig } from '../../src/driver/config.js';
import {
  Informer,
  isAlreadyExists,
  isKubeError,
  isNotFound,
  objectKey,
  WorkQueue,
  type KubeClient,
} from '../../src/kube/index.js';
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { SandboxResources } from '../capi/resources.js';
import { MachineProvision, type StandInHarvesterMachine, type StandInMachine } from './machine-provision.js';
import type { CreateJob, JobRun, RemovalJob } from './rancher-jobs.js';
import { FINALIZER_PROVISIONING_CLUSTER, savedDriverConfig } from './guest-cluster.js';
import { machineStateSecret } from './machine-state.js';
import { driverRemovalJob } from './removal-job.js';

export { credentialEnv, credentialEnvName } from './rancher-jobs.js';
export type { CreateJob, JobContext, JobRun, RemovalJob, RemovalJobContext } from './rancher-jobs.js';

export interface RancherStandInOptions {
  /** Namespace of the clusters and machines (default: all). */
  namespace?: string;
  /** Default: the driver in process (removal-job.ts), as Rancher's rm Job runs it. */
  removalJob?: RemovalJob;
  /** Default: savedConfigCreateJob (no VM is made: the test makes it). */
  createJob?: CreateJob;
  /** Retries after a failed rm run, as the rm Job's backoffLimit (3). */
  backoffLimit?: number;
  /** Pause between rm runs (Kubernetes' Job backoff starts at 10 s; short here). */
  retryDelayMs?: number;
  /** Where the guest clusters' nodes register: the apiserver their `<cluster>-kubeconfig` names. */
  downstream?: KubeClient;
  logger?: Logger;
}

export interface RancherStandIn {
  /** Every create and rm run, in order: tests read what ran, when, and with which credential. */
  readonly runs: JobRun[];
  /** The rm runs only. */
  readonly removals: JobRun[];
  stop(): Promise<void>;
}

interface BootstrapObject extends KubeObject {
  status?: { ready?: boolean; dataSecretName?: string | null };
}
interface CapiClusterObject extends KubeObject {
  status?: { infrastructureReady?: boolean };
}
interface ProvisioningClusterObject extends KubeObject {
  spec?: { cloudCredentialSecretName?: string | null };
}

const deleting = (o: KubeObject | undefined): boolean => Boolean(o?.metadata.deletionTimestamp);

/**
 * The default create job: what `rancher-machine create` leaves in `<m>-machine-state`, a driver
 * config holding the credential the job got; `savedConfig` builds it (guest-cluster.ts).
 */
export function savedConfigCreateJob(
  rancher: KubeClient,
  savedConfig: (o: {
    instanceName: string;
    clusterName: string;
    vmNamespace: string;
    kubeconfig: string;
  }) => DriverConfig,
): CreateJob {
  return async ({ harvesterMachine: hm, env, clusterName }) => {
    const name = hm.metadata.name;
    const instanceName = rancherInstanceName(name);
    const secret = machineStateSecret({
      namespace: hm.metadata.namespace ?? '',
      machineName: name,
      instanceName,
      driverConfig: savedConfig({
        instanceName,
        clusterName,
        vmNamespace: hm.spec?.vmNamespace ?? '',
        kubeconfig: env.HARVESTER_KUBECONFIG_CONTENT ?? '',
      }),
      owner: hm,
    });
    await rancher.patch(
      Resources.secret,
      { namespace: hm.metadata.namespace ?? '', name: secret.metadata.name },
      { data: (secret as KubeObject & { data?: unknown }).data },
    );
  };
}

export async function startRancherStandIn(
  rancher: KubeClient,
  options: RancherStandInOptions = {},
): Promise<RancherStandIn> {
  const logger = options.logger ?? silentLogger;
  const scope = options.namespace !== undefined ? { namespace: options.namespace } : {};
  const informer = <T extends KubeObject>(type: ResourceType): Informer<T> =>
    new Informer<T>(rancher, type, { ...scope, logger });
  const provisioning = informer<ProvisioningClusterObject>(Resources.provisioningCluster);
  const clusters = informer<CapiClusterObject>(Resources.capiCluster);
  const machines = informer<StandInMachine>(Resources.capiMachine);
  const infra = informer<StandInHarvesterMachine>(Resources.harvesterMachine);
  const bootstraps = informer<BootstrapObject>(SandboxResources.rkeBootstrap);
  const queue = (fn: (key: string) => Promise<void>): WorkQueue =>
    new WorkQueue(fn, { logger, baseDelayMs: 100, maxDelayMs: 2000 });

  const provisioningQueue = queue(async (key) => {
    const pc = provisioning.get(key);
    if (!pc || !deleting(pc) || !(pc.metadata.finalizers ?? []).includes(FINALIZER_PROVISIONING_CLUSTER))
      return;
    const capi = clusters.get(key);
    if (capi && !deleting(capi))
      await rancher.delete(Resources.capiCluster, {
        namespace: pc.metadata.namespace ?? '',
        name: pc.metadata.name,
      });
    if (capi) return; // Cluster API deletes its machines, then removes its own finalizer
    try {
      await rancher.patch(
        Resources.provisioningCluster,
        { namespace: pc.metadata.namespace ?? '', name: pc.metadata.name },
        {
          metadata: {
            resourceVersion: pc.metadata.resourceVersion,
            finalizers: (pc.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_PROVISIONING_CLUSTER),
          },
        },
      );
    } catch (err) {
      if (!isKubeError(err, 'NotFound', 'Conflict')) throw err;
    }
  });

  const bootstrapQueue = queue(async (key) => {
    const bs = bootstraps.get(key);
    if (!bs || deleting(bs) || bs.status?.ready) return;
    const owner = (bs.metadata.ownerReferences ?? []).find((r) => r.kind === 'Machine' && r.controller);
    if (!owner) return;
    const namespace = bs.metadata.namespace ?? '';
    const secretName = `${bs.metadata.name}-machine-bootstrap`;
    try {
      await rancher.create(Resources.secret, {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'rke.cattle.io/bootstrap',
        metadata: {
          name: secretName,
          namespace,
          ownerReferences: [
            {
              apiVersion: 'rke.cattle.io/v1',
              kind: 'RKEBootstrap',
              name: bs.metadata.name,
              uid: bs.metadata.uid ?? '',
              controller: true,
            },
          ],
        },
        data: {
          value: Buffer.from('#!/bin/sh\n# the sandbox has no system-agent to install\n').toString('base64'),
        },
      } as KubeObject);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    await rancher.patch(
      SandboxResources.rkeBootstrap,
      { namespace, name: bs.metadata.name, subresource: 'status' },
      { status: { ready: true, dataSecretName: secretName } },
    );
  });

  // Rancher's RKECluster and RKEControlPlane controllers, as far as Cluster API reads them:
  // ready (and the control plane initialized) once they exist.
  const readyQueue = queue(async (key) => {
    const [kind, namespace = '', name = ''] = key.split('/');
    const type = kind === 'RKECluster' ? SandboxResources.rkeCluster : SandboxResources.rkeControlPlane;
    const status = kind === 'RKECluster' ? { ready: true } : { ready: true, initialized: true };
    try {
      await rancher.patch(type, { namespace, name, subresource: 'status' }, { status });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  });
  const readyInformers = [SandboxResources.rkeCluster, SandboxResources.rkeControlPlane].map((type) => {
    const i = informer<KubeObject & { status?: { ready?: boolean } }>(type);
    i.on((e) => {
      if (e.type !== 'DELETED' && !e.object.status?.ready && !deleting(e.object))
        readyQueue.add(`${type.kind}/${objectKey(e.object)}`);
    });
    return i;
  });

  // The queue calls the provisioner, which requeues through the queue (on a job's end).
  const infraQueue = queue((key) => provision.reconcile(key));
  const provision = new MachineProvision({
    rancher,
    downstream: options.downstream ?? rancher,
    machine: (ns, name) => machines.get(`${ns}/${name}`),
    capiCluster: (ns, name) => clusters.get(`${ns}/${name}`),
    provisioningCluster: (ns, name) => provisioning.get(`${ns}/${name}`),
    harvesterMachine: (key) => infra.get(key),
    createJob: options.createJob ?? savedConfigCreateJob(rancher, savedDriverConfig),
    removalJob: options.removalJob ?? driverRemovalJob(rancher, logger),
    backoffLimit: options.backoffLimit ?? 3,
    retryDelayMs: options.retryDelayMs ?? 500,
    requeue: (key) => infraQueue.add(key),
    logger,
  });
  const infraOf = (m: KubeObject): string | undefined => {
    const ref = (m as { spec?: { infrastructureRef?: { name?: string; namespace?: string } } }).spec
      ?.infrastructureRef;
    return ref?.name ? `${ref.namespace ?? m.metadata.namespace ?? ''}/${ref.name}` : undefined;
  };

  provisioning.on((e) => provisioningQueue.add(objectKey(e.object)));
  clusters.on((e) => {
    provisioningQueue.add(objectKey(e.object));
    for (const hm of infra.list((o) => o.metadata.namespace === e.object.metadata.namespace))
      infraQueue.add(objectKey(hm));
  });
  machines.on((e) => {
    const key = infraOf(e.object);
    if (key) infraQueue.add(key);
  });
  infra.on((e) => infraQueue.add(objectKey(e.object)));
  bootstraps.on((e) => bootstrapQueue.add(objectKey(e.object)));
  const informers = [provisioning, clusters, machines, infra, bootstraps, ...readyInformers];
  await Promise.all(informers.map((i) => i.start()));

  const queues = [provisioningQueue, bootstrapQueue, readyQueue, infraQueue];
  return {
    runs: provision.runs,
    get removals() {
      return provision.runs.filter((r) => r.kind === 'remove');
    },
    stop: async () => {
      await Promise.all(queues.map((q) => q.stop()));
      await provision.running();
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
