// Each guest cluster's own apiserver, and Rancher's kubeconfig manager writing the
// `<cluster>-kubeconfig` Secret for it (rancher/rancher pkg/provisioningv2/kubeconfig/manager.go;
// docs/upstream/cluster-api.md#the-guest-clusters-kubeconfig). Real guest clusters run their
// control plane on their machines; here a kube-apiserver (control-plane/guest-apiserver.ts) is
// started when the provisioning Cluster appears and stopped once it is gone (its machines
// all removed), so that each guest's nodes and PersistentVolumes live in that guest alone.
// A cluster whose Secret someone else wrote (a test pointing it at Rancher's own apiserver) is
// left as it is.
import { formatKey, type ObjectKey } from '../../src/api/object-key.js';
import {
  isAlreadyExists,
  isKubeError,
  type Cache,
  type KubeClient,
  type Manager,
} from '../../src/kube/index.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import type { Logger } from '../../src/log/logger.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../src/rancher/labels.js';
import { GUEST_KUBECONFIG_KEY, guestKubeconfigSecretName } from '../../src/rancher/names.js';
import type { GuestApiserver } from '../control-plane/guest-apiserver.js';
import { GuestApiservers, type GuestApiserverFigures } from './guest-apiservers.js';

/** On the Secret: it points at the sandbox's apiserver for this guest (the server URL). */
export const ANNOTATION_GUEST_APISERVER = 'sandbox.harvester-machine.io/guest-apiserver';

/** The guest clusters' apiservers the stand-in runs. */
export interface GuestControlPlanes {
  /** Running guest apiservers by "namespace/cluster". */
  readonly running: ReadonlyMap<string, GuestApiserver>;
  /** Start time and resident set of each, for the measurements. */
  figures(): GuestApiserverFigures[];
  stop(): Promise<void>;
}

/** What a reconcile does for a provisioning Cluster, given its kubeconfig Secret. */
export type GuestSecretStep = 'foreign' | 'name' | 'wait' | 'write';

/**
 * The pure decision for a live cluster: leave a Secret someone else wrote; only name a Secret
 * already pointing at the running apiserver; start no new guest for a cluster going away; else
 * start (or reuse) the apiserver and write the Secret.
 */
export function guestSecretStep(
  cluster: KubeObject,
  secret: KubeObject | undefined,
  runningServer: string | undefined,
): GuestSecretStep {
  const ours = secret?.metadata.annotations?.[ANNOTATION_GUEST_APISERVER];
  if (secret && ours === undefined) return 'foreign';
  if (secret && runningServer === ours) return 'name';
  if (cluster.metadata.deletionTimestamp) return 'wait';
  return 'write';
}

/** The `<cluster>-kubeconfig` Secret pointing at the guest's apiserver, owned by the provisioning Cluster. */
export function guestKubeconfigSecret(
  at: { namespace: string; name: string },
  cluster: ObjectKey & { uid?: string },
  apiserver: Pick<GuestApiserver, 'server' | 'kubeconfig'>,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      ...at,
      labels: { [CAPI_LABEL_CLUSTER_NAME]: cluster.name },
      annotations: { [ANNOTATION_GUEST_APISERVER]: apiserver.server },
      ownerReferences: [
        {
          apiVersion: 'provisioning.cattle.io/v1',
          kind: 'Cluster',
          name: cluster.name,
          uid: cluster.uid ?? '',
        },
      ],
    },
    data: { [GUEST_KUBECONFIG_KEY]: Buffer.from(apiserver.kubeconfig).toString('base64') },
  } as KubeObject;
}

/**
 * Writes the Secret over the one there (pinned to its resourceVersion) or creates it.
 * Resolves false when another wrote it first: the next event decides again.
 */
async function writeSecret(
  rancher: KubeClient,
  secret: KubeObject | undefined,
  body: KubeObject,
): Promise<boolean> {
  if (secret) {
    await rancher.update(Resources.secret, {
      ...body,
      metadata: { ...body.metadata, resourceVersion: secret.metadata.resourceVersion },
    });
    return true;
  }
  try {
    await rancher.create<KubeObject>(Resources.secret, body);
    return true;
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    return false;
  }
}

/**
 * Rancher names the Secret in the cluster's status.clientSecretName in the reconcile that
 * writes it (and sets status.ready with it; here the Secret is written as the cluster
 * appears, before its machines, so ready is left to what reads it elsewhere).
 */
async function nameSecret(
  rancher: KubeClient,
  clusterKey: ObjectKey,
  cluster: KubeObject,
  secretName: string,
): Promise<void> {
  const status = (cluster as KubeObject & { status?: { clientSecretName?: string } }).status;
  if (status?.clientSecretName === secretName) return;
  try {
    await rancher.patch(
      Resources.provisioningCluster,
      { ...clusterKey, subresource: 'status' },
      { status: { clientSecretName: secretName } },
    );
  } catch (err) {
    if (!isKubeError(err, 'NotFound')) throw err; // gone meanwhile
  }
}

/**
 * Declares on the Rancher stand-in's manager the controller that runs each provisioning
 * Cluster's own apiserver and writes its kubeconfig Secret.
 */
export function declareGuestControlPlanes(
  manager: Manager,
  clusters: Cache<KubeObject>,
  opts: { rancher: KubeClient; etcdUrl: string; logger: Logger },
): GuestControlPlanes {
  const apiservers = new GuestApiservers(opts);

  const reconcile = async (clusterKey: ObjectKey): Promise<void> => {
    const key = formatKey(clusterKey);
    const cluster = clusters.get(clusterKey);
    // Gone: its machines were all removed, and the control plane on them with them.
    if (!cluster) return apiservers.stopOne(key);
    const at = { namespace: clusterKey.namespace, name: guestKubeconfigSecretName(clusterKey.name) };
    const secret = await opts.rancher.find<KubeObject>(Resources.secret, at);
    switch (guestSecretStep(cluster, secret, apiservers.running.get(key)?.server)) {
      case 'foreign': // someone else's guest apiserver
      case 'wait':
        return;
      case 'name':
        return nameSecret(opts.rancher, clusterKey, cluster, at.name);
      case 'write': {
        const apiserver = await apiservers.apiserverFor(key);
        const body = guestKubeconfigSecret(at, { ...clusterKey, uid: cluster.metadata.uid }, apiserver);
        if (await writeSecret(opts.rancher, secret, body))
          await nameSecret(opts.rancher, clusterKey, cluster, at.name);
      }
    }
  };

  manager.controller('guest-control-plane', { reconcile, concurrency: 2 }).watch(clusters);

  return {
    running: apiservers.running,
    figures: () => apiservers.figures(),
    stop: () => apiservers.stopAll(),
  };
}
