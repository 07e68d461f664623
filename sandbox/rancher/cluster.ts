// The downstream cluster as Rancher's local cluster knows it: a management.cattle.io
// Cluster named by its id (c-m-xxxxxxxx), which Rancher's /k8s/clusters/<id> proxy looks up.
import type { KubeClient } from '../../src/kube/client.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import { RancherResources, type RancherClusterObject } from './resources.js';

/** Registers an imported Harvester cluster (idempotent). */
export async function createRancherCluster(
  rancher: KubeClient,
  opts: { clusterId: string; displayName?: string },
): Promise<void> {
  let cluster: RancherClusterObject;
  try {
    cluster = await rancher.create<RancherClusterObject>(RancherResources.cluster, {
      apiVersion: 'management.cattle.io/v3',
      kind: 'Cluster',
      metadata: { name: opts.clusterId, labels: { 'provider.cattle.io': 'harvester' } },
      spec: { displayName: opts.displayName ?? opts.clusterId, internal: false },
    });
  } catch (err) {
    if (isAlreadyExists(err)) return;
    throw err;
  }
  await rancher.update<RancherClusterObject>(
    RancherResources.cluster,
    {
      ...cluster,
      status: {
        provider: 'harvester',
        driver: 'imported',
        conditions: [
          { type: 'Provisioned', status: 'True' },
          { type: 'Ready', status: 'True' },
        ],
      },
    },
    'status',
  );
}
