// Rancher's local cluster with the real Cluster API: a control plane whose CRDs (Rancher's from
// sandbox/crds, Cluster API's from the module) are in before kube-controller-manager starts, and
// the Cluster API manager running against it.
import {
  startControlPlane,
  type ControlPlane,
  type ControlPlaneOptions,
} from '../control-plane/control-plane.js';
import { OWN_CAPI_GROUP, installCrds } from '../crds/install.js';
import { ClusterApi, type ClusterApiOptions } from './manager.js';

export { ClusterApi, describeClusterApi, type ClusterApiOptions } from './manager.js';
export {
  CAPI_RANCHER_2_13,
  CAPI_V1BETA2,
  CAPI_VERSIONS,
  clusterApiVersion,
  type ClusterApiVersion,
} from './versions.js';
export { SandboxResources, machineType } from './resources.js';

export interface RancherWithClusterApi {
  rancher: ControlPlane;
  clusterApi: ClusterApi;
  /** Stops the manager, then the control plane. */
  stop(): Promise<void>;
}

export async function startRancherWithClusterApi(
  opts: {
    clusterApi?: ClusterApiOptions;
    controlPlane?: Omit<ControlPlaneOptions, 'beforeControllerManager'>;
  } = {},
): Promise<RancherWithClusterApi> {
  const clusterApi = await ClusterApi.prepare(opts.clusterApi);
  const rancher = await startControlPlane({
    name: 'rancher',
    ...opts.controlPlane,
    beforeControllerManager: async (admin, pki) => {
      await installCrds(admin, 'rancher', 30_000, { without: [OWN_CAPI_GROUP] });
      await clusterApi.installCrds(admin, pki);
    },
  });
  try {
    await clusterApi.start(rancher);
  } catch (err) {
    await rancher.stop();
    throw err;
  }
  return {
    rancher,
    clusterApi,
    stop: async () => {
      await clusterApi.stop(rancher.admin);
      await rancher.stop();
    },
  };
}
