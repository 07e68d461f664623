// The Cluster API versions the sandbox runs, and why.
// Rancher ships Cluster API's own controller-manager (image rancher/mirrored-cluster-api-controller)
// in its rancher-provisioning-capi chart; rancher/charts, charts/rancher-provisioning-capi/<v>/values.yaml:
//   Rancher 2.10 (chart 105.x) v1.8.3 · 2.11 (106.x) v1.9.5 · 2.12 (107.x) v1.10.2 · 2.13 (108.x) v1.10.6
// (Rancher's main branch is at v1.13.2). Keep in step with build-cluster-api.sh.

export interface ClusterApiVersion {
  version: string;
  /** The Machine API version stored in etcd: v1beta2 needs the conversion webhook for v1beta1 clients. */
  storage: 'v1beta1' | 'v1beta2';
  /** Rancher's chart turns off MachinePool, ClusterResourceSet, ClusterTopology and RuntimeSDK; later versions lost the CRS gate (GA). */
  featureGates: string;
  why: string;
}

const RANCHER_GATES = 'MachinePool=false,ClusterResourceSet=false,ClusterTopology=false,RuntimeSDK=false';
const GATES_WITHOUT_CRS = 'MachinePool=false,ClusterTopology=false,RuntimeSDK=false';

/** What Rancher 2.12/2.13 run: the default of the walkthrough and the controller's tests. */
export const CAPI_RANCHER_2_13: ClusterApiVersion = {
  version: 'v1.10.6',
  storage: 'v1beta1',
  featureGates: RANCHER_GATES,
  why: 'Rancher 2.13 bundles v1.10.6 (2.12: v1.10.2); v1beta1 served and stored, v1beta2 conditions beside',
};

/** The next line: v1beta2 stored, v1beta1 served through the conversion webhook (Rancher main). */
export const CAPI_V1BETA2: ClusterApiVersion = {
  version: 'v1.13.6',
  storage: 'v1beta2',
  featureGates: GATES_WITHOUT_CRS,
  why: "Rancher's main branch is on v1.13; v1beta2 is stored and v1beta1 (what the controller reads) is converted",
};

export const CAPI_VERSIONS = [CAPI_RANCHER_2_13, CAPI_V1BETA2] as const;

/** A version by tag; HARVESTER_MACHINE_CAPI_VERSION picks the default (any tag the build script accepts). */
export function clusterApiVersion(tag = process.env.HARVESTER_MACHINE_CAPI_VERSION): ClusterApiVersion {
  if (!tag) return CAPI_RANCHER_2_13;
  const known = CAPI_VERSIONS.find((v) => v.version === tag);
  if (known) return known;
  const minor = /^v1\.(\d+)\.\d+$/.exec(tag)?.[1];
  if (minor === undefined)
    throw new Error(
      `HARVESTER_MACHINE_CAPI_VERSION=${tag} is not a Cluster API tag such as ${CAPI_RANCHER_2_13.version}`,
    );
  return {
    version: tag,
    storage: Number(minor) >= 11 ? 'v1beta2' : 'v1beta1',
    featureGates: Number(minor) >= 11 ? GATES_WITHOUT_CRS : RANCHER_GATES,
    why: 'chosen by HARVESTER_MACHINE_CAPI_VERSION',
  };
}
