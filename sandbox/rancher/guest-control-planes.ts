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
import { residentMiB, startGuestApiserver, type GuestApiserver } from '../control-plane/guest-apiserver.js';

/** On the Secret: it points at the sandbox's apiserver for this guest (the server URL). */
export const ANNOTATION_GUEST_APISERVER = 'sandbox.harvester-machine.io/guest-apiserver';

export interface GuestControlPlanes {
  /** Running guest apiservers by "namespace/cluster". */
  readonly running: ReadonlyMap<string, GuestApiserver>;
  /** Start time and resident set of each, for the measurements. */
  figures(): Array<{ cluster: string; startMs: number; rssMiB: number | undefined }>;
  stop(): Promise<void>;
}

export function declareGuestControlPlanes(
  manager: Manager,
  clusters: Cache<KubeObject>,
  opts: { rancher: KubeClient; etcdUrl: string; logger: Logger },
): GuestControlPlanes {
  const running = new Map<string, GuestApiserver>();
  const starting = new Map<string, Promise<GuestApiserver>>();
  let stopped = false;

  const stopOne = async (key: string): Promise<void> => {
    const apiserver = running.get(key);
    running.delete(key);
    await apiserver?.stop();
    if (apiserver) opts.logger.info('guest apiserver stopped', { cluster: key });
  };

  const apiserverFor = (key: string): Promise<GuestApiserver> => {
    const known = running.get(key);
    if (known) return Promise.resolve(known);
    let pending = starting.get(key);
    if (!pending) {
      pending = startGuestApiserver({ name: key, etcdUrl: opts.etcdUrl })
        .then(async (apiserver) => {
          if (stopped) {
            await apiserver.stop();
            throw new Error('stopped');
          }
          running.set(key, apiserver);
          opts.logger.info('guest apiserver started', {
            cluster: key,
            server: apiserver.server,
            ms: Math.round(apiserver.startMs),
          });
          return apiserver;
        })
        .finally(() => starting.delete(key));
      starting.set(key, pending);
    }
    return pending;
  };

  const reconcile = async (clusterKey: ObjectKey): Promise<void> => {
    const key = formatKey(clusterKey);
    const cluster = clusters.get(clusterKey);
    // Gone: its machines were all removed, and the control plane on them with them.
    if (!cluster) return stopOne(key);
    const at = { namespace: clusterKey.namespace, name: guestKubeconfigSecretName(clusterKey.name) };
    const secret = await opts.rancher.find<KubeObject>(Resources.secret, at);
    const ours = secret?.metadata.annotations?.[ANNOTATION_GUEST_APISERVER];
    if (secret && ours === undefined) return; // someone else's guest apiserver
    if (secret && running.get(key)?.server === ours) return named(clusterKey, cluster, at.name);
    if (cluster.metadata.deletionTimestamp) return; // no new guest for a cluster going away
    const apiserver = await apiserverFor(key);
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        ...at,
        labels: { [CAPI_LABEL_CLUSTER_NAME]: clusterKey.name },
        annotations: { [ANNOTATION_GUEST_APISERVER]: apiserver.server },
        ownerReferences: [
          {
            apiVersion: 'provisioning.cattle.io/v1',
            kind: 'Cluster',
            name: clusterKey.name,
            uid: cluster.metadata.uid ?? '',
          },
        ],
      },
      data: { [GUEST_KUBECONFIG_KEY]: Buffer.from(apiserver.kubeconfig).toString('base64') },
    };
    if (secret) {
      await opts.rancher.update(Resources.secret, {
        ...body,
        metadata: { ...body.metadata, resourceVersion: secret.metadata.resourceVersion },
      });
    } else {
      try {
        await opts.rancher.create<KubeObject>(Resources.secret, body);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err; // the next event decides again
        return;
      }
    }
    await named(clusterKey, cluster, at.name);
  };

  // Rancher names the Secret in the cluster's status.clientSecretName in the reconcile that
  // writes it (and sets status.ready with it; here the Secret is written as the cluster
  // appears, before its machines, so ready is left to what reads it elsewhere).
  const named = async (clusterKey: ObjectKey, cluster: KubeObject, secretName: string): Promise<void> => {
    const status = (cluster as KubeObject & { status?: { clientSecretName?: string } }).status;
    if (status?.clientSecretName === secretName) return;
    try {
      await opts.rancher.patch(
        Resources.provisioningCluster,
        { ...clusterKey, subresource: 'status' },
        { status: { clientSecretName: secretName } },
      );
    } catch (err) {
      if (!isKubeError(err, 'NotFound')) throw err; // gone meanwhile
    }
  };

  manager.controller('guest-control-plane', { reconcile, concurrency: 2 }).watch(clusters);

  return {
    running,
    figures: () =>
      [...running.values()].map((a) => ({
        cluster: a.name,
        startMs: Math.round(a.startMs),
        rssMiB: residentMiB(a.pid),
      })),
    stop: async () => {
      stopped = true;
      await Promise.allSettled([...starting.values()]);
      await Promise.all([...running.keys()].map((k) => stopOne(k)));
    },
  };
}
