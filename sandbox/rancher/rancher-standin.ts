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
import type { DriverConfig } from '../../src/driver/config/index.js';
import { formatKey, keyOf, objectKey, parseKey, type ObjectKey } from '../../src/api/object-key.js';
import {
  ignoreAlreadyExists,
  ignoreNotFound,
  isKubeError,
  Manager,
  type Cache,
  type InformerEvent,
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
import { declareGuestControlPlanes, type GuestControlPlanes } from './guest-control-planes.js';
import { GuestKubeconfigs } from './guest-kubeconfigs.js';

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
  /**
   * Starts each guest cluster's own apiserver on this etcd and writes its `<cluster>-kubeconfig`
   * (guest-control-planes.ts); without it, the Secret is the test's (createGuestCluster writes it).
   */
  guestApiservers?: { etcdUrl: string };
  logger?: Logger;
}

export interface RancherStandIn {
  /** Every create and rm run, in order: tests read what ran, when, and with which credential. */
  readonly runs: JobRun[];
  /** The rm runs only. */
  readonly removals: JobRun[];
  /** With guestApiservers: the guest clusters' apiservers. */
  readonly guestControlPlanes: GuestControlPlanes | undefined;
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
type ReadyObject = KubeObject & { status?: { ready?: boolean } };

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

/** The stand-in's caches: the kinds Rancher's controllers read, in the watched namespace(s). */
function rancherCaches(manager: Manager, namespace: string | undefined) {
  const cache = <T extends KubeObject>(type: ResourceType): Cache<T> =>
    manager.cache<T>({ type, ...(namespace !== undefined ? { namespaces: [namespace] } : {}) });
  return {
    provisioning: cache<ProvisioningClusterObject>(Resources.provisioningCluster),
    clusters: cache<CapiClusterObject>(Resources.capiCluster),
    machines: cache<StandInMachine>(Resources.capiMachine),
    infra: cache<StandInHarvesterMachine>(Resources.harvesterMachine),
    bootstraps: cache<BootstrapObject>(SandboxResources.rkeBootstrap),
    rkeClusters: cache<ReadyObject>(SandboxResources.rkeCluster),
    rkeControlPlanes: cache<ReadyObject>(SandboxResources.rkeControlPlane),
  };
}
type RancherCaches = ReturnType<typeof rancherCaches>;

/**
 * `wrangler.cattle.io/provisioning-cluster-remove`: delete the CAPI Cluster, and keep the
 * finalizer until Cluster API has deleted its machines and removed its own.
 */
function provisioningClusterRemoval(rancher: KubeClient, caches: RancherCaches) {
  return async (key: ObjectKey): Promise<void> => {
    const pc = caches.provisioning.get(key);
    if (!pc || !deleting(pc) || !(pc.metadata.finalizers ?? []).includes(FINALIZER_PROVISIONING_CLUSTER))
      return;
    const capi = caches.clusters.get(key);
    if (capi && !deleting(capi)) await rancher.delete(Resources.capiCluster, key);
    if (capi) return;
    try {
      await rancher.patch(Resources.provisioningCluster, key, {
        metadata: {
          resourceVersion: pc.metadata.resourceVersion,
          finalizers: (pc.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_PROVISIONING_CLUSTER),
        },
      });
    } catch (err) {
      if (!isKubeError(err, 'NotFound', 'Conflict')) throw err;
    }
  };
}

/** Rancher's RKEBootstrap controller: the bootstrap Secret, then status.ready and dataSecretName. */
function bootstrapProvider(rancher: KubeClient, caches: RancherCaches) {
  return async (key: ObjectKey): Promise<void> => {
    const bs = caches.bootstraps.get(key);
    if (!bs || deleting(bs) || bs.status?.ready) return;
    const owner = (bs.metadata.ownerReferences ?? []).find((r) => r.kind === 'Machine' && r.controller);
    if (!owner) return;
    const secretName = `${bs.metadata.name}-machine-bootstrap`;
    await rancher
      .create(Resources.secret, {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'rke.cattle.io/bootstrap',
        metadata: {
          name: secretName,
          namespace: key.namespace,
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
      } as KubeObject)
      .catch(ignoreAlreadyExists);
    await rancher.patch(
      SandboxResources.rkeBootstrap,
      { ...key, subresource: 'status' },
      { status: { ready: true, dataSecretName: secretName } },
    );
  };
}

/**
 * Rancher's RKECluster and RKEControlPlane controllers, as far as Cluster API reads them:
 * ready (and the control plane initialized) once they exist.
 */
function readyOnSight(rancher: KubeClient, type: ResourceType, status: Record<string, boolean>) {
  return async (key: ObjectKey): Promise<void> => {
    await rancher.patch(type, { ...key, subresource: 'status' }, { status }).catch(ignoreNotFound);
  };
}
const notReadyYet = (e: InformerEvent<ReadyObject>): ObjectKey | undefined =>
  e.type !== 'DELETED' && !e.object.status?.ready && !deleting(e.object) ? keyOf(e.object) : undefined;

export async function startRancherStandIn(
  rancher: KubeClient,
  options: RancherStandInOptions = {},
): Promise<RancherStandIn> {
  const logger = options.logger ?? silentLogger;
  const manager = new Manager({
    client: rancher,
    logger,
    queueDefaults: { baseDelayMs: 100, maxDelayMs: 2000 },
  });
  const caches = rancherCaches(manager, options.namespace);
  const guests = new GuestKubeconfigs(rancher);
  // The queue calls the provisioner, which requeues through the queue (on a job's end).
  const provision = new MachineProvision({
    rancher,
    downstream: (namespace, cluster) => guests.client(namespace, cluster),
    machine: (ns, name) => caches.machines.get(objectKey(ns, name)),
    capiCluster: (ns, name) => caches.clusters.get(objectKey(ns, name)),
    provisioningCluster: (ns, name) => caches.provisioning.get(objectKey(ns, name)),
    harvesterMachine: (key) => caches.infra.get(parseKey(key)),
    createJob: options.createJob ?? savedConfigCreateJob(rancher, savedDriverConfig),
    removalJob: options.removalJob ?? driverRemovalJob(rancher, logger),
    backoffLimit: options.backoffLimit ?? 3,
    retryDelayMs: options.retryDelayMs ?? 500,
    requeue: (key) => machineProvisioning.enqueue(parseKey(key)),
    logger,
  });

  manager
    .controller('provisioning-cluster-remove', { reconcile: provisioningClusterRemoval(rancher, caches) })
    .watch(caches.provisioning)
    .watch(caches.clusters);
  manager
    .controller('rke-bootstrap', { reconcile: bootstrapProvider(rancher, caches) })
    .watch(caches.bootstraps);
  manager
    .controller('rke-cluster', {
      reconcile: readyOnSight(rancher, SandboxResources.rkeCluster, { ready: true }),
    })
    .watch(caches.rkeClusters, notReadyYet);
  manager
    .controller('rke-control-plane', {
      reconcile: readyOnSight(rancher, SandboxResources.rkeControlPlane, { ready: true, initialized: true }),
    })
    .watch(caches.rkeControlPlanes, notReadyYet);
  const machineProvisioning = manager
    .controller('machine-provision', { reconcile: (key) => provision.reconcile(formatKey(key)) })
    .watch(caches.infra)
    .watch(caches.machines, (e) => infrastructureOf(e.object))
    .watch(caches.clusters, (e) =>
      caches.infra.list((o) => o.metadata.namespace === e.object.metadata.namespace).map(keyOf),
    );
  const guestControlPlanes = options.guestApiservers
    ? declareGuestControlPlanes(manager, caches.provisioning, {
        rancher,
        etcdUrl: options.guestApiservers.etcdUrl,
        logger,
      })
    : undefined;
  await manager.start();

  return {
    runs: provision.runs,
    get removals() {
      return provision.runs.filter((r) => r.kind === 'remove');
    },
    guestControlPlanes,
    stop: async () => {
      manager.halt();
      await provision.running();
      await manager.stop();
      await guestControlPlanes?.stop();
      guests.close();
    },
  };
}

/** The HarvesterMachine a Machine's infrastructureRef names. */
function infrastructureOf(m: StandInMachine): ObjectKey | undefined {
  const ref = (m as { spec?: { infrastructureRef?: { name?: string; namespace?: string } } }).spec
    ?.infrastructureRef;
  return ref?.name ? objectKey(ref.namespace ?? m.metadata.namespace, ref.name) : undefined;
}
