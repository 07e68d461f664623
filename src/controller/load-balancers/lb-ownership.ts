// Whose load balancers the ones labelled `cloudprovider.harvesterhci.io/cluster=<name>` are,
// before the cleanup of a deleted guest cluster deletes them. The label is the cloud
// provider's --cluster-name, a free-text chart value (global.cattle.clusterName) that
// Rancher's UI sets to the cluster's name but Terraform or a copied cluster may set to any
// name, another cluster's included (docs/upstream/load-balancers.md#which-cluster-name).
// Pure: the cleanup (load-balancer-cleanup.ts) asks before it lists anything on Harvester.
import { isAmbiguousClusterName } from '../../harvester/load-balancers.js';
import { keyText } from '../../api/object-key.js';

export interface ClusterNaming {
  namespace: string;
  name: string;
  /** The cloud provider's --cluster-name from its chart values; undefined when they set none. */
  lbClusterName: string | undefined;
}

export type Ownership =
  | { certain: true }
  | {
      certain: false;
      reason: string;
      /** "fleet-default/b": the other clusters that label load balancers with the same name. */
      others: string[];
    };

/**
 * The load balancers labelled with `deleted.name` are the deleted cluster's own only when
 * that name names no cluster in general (`kubernetes`, empty), its own chart values do not
 * give its cloud provider another name, and no other Rancher cluster the controller sees
 * (deleted or not: one being deleted may still run) gives its cloud provider this name.
 */
export function lbOwnership(deleted: ClusterNaming, clusters: readonly ClusterNaming[]): Ownership {
  const { name } = deleted;
  if (isAmbiguousClusterName(name))
    return {
      certain: false,
      others: [],
      reason: `guest cluster name "${name}" is what the cloud provider uses without --cluster-name: its load balancers cannot be told from other clusters'`,
    };
  if (deleted.lbClusterName !== undefined && deleted.lbClusterName !== name)
    return {
      certain: false,
      others: [],
      reason: `its chart values give Harvester's cloud provider the cluster name "${deleted.lbClusterName.slice(0, 63)}" (harvester-cloud-provider global.cattle.clusterName), not "${name}": the load balancers labelled ${name} are not known to be its own, and those labelled with that name may be another cluster's`,
    };
  const others = clusters
    .filter((c) => !(c.namespace === deleted.namespace && c.name === name))
    .filter((c) => c.lbClusterName === name)
    .map((c) => keyText(c.namespace, c.name))
    .sort();
  if (others.length > 0)
    return {
      certain: false,
      others,
      reason: `guest cluster${others.length > 1 ? 's' : ''} ${others.join(', ')} also label${others.length > 1 ? '' : 's'} ${others.length > 1 ? 'their' : 'its'} load balancers "${name}" (harvester-cloud-provider global.cattle.clusterName in ${others.length > 1 ? 'their' : 'its'} chart values): they cannot be told apart, so none is deleted`,
    };
  return { certain: true };
}
