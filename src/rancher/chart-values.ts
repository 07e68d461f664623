// What a provisioning Cluster's chart values tell about its guest cluster: the name Harvester's
// cloud provider labels the guest's load balancers with. The harvester-cloud-provider chart
// passes `--cluster-name={{ .Values.global.cattle.clusterName }}` when that value is set, which
// Rancher's UI sets to the cluster's name; without it the cloud provider says `kubernetes`
// (docs/upstream/load-balancers.md#which-cluster-name).

export const CLOUD_PROVIDER_CHART = 'harvester-cloud-provider';

/** The slice of a provisioning Cluster this reads. */
export interface ChartValuesHolder {
  spec?: { rkeConfig?: { chartValues?: unknown } | null } | null;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * `chartValues.harvester-cloud-provider.global.cattle.clusterName`, when it is a string;
 * undefined when the cluster's chart values do not set it.
 */
export function cloudProviderClusterName(cluster: ChartValuesHolder | undefined): string | undefined {
  const values = cluster?.spec?.rkeConfig?.chartValues;
  const chart = isObject(values) ? values[CLOUD_PROVIDER_CHART] : undefined;
  const global = isObject(chart) ? chart['global'] : undefined;
  const cattle = isObject(global) ? global['cattle'] : undefined;
  const name = isObject(cattle) ? cattle['clusterName'] : undefined;
  return typeof name === 'string' ? name : undefined;
}
