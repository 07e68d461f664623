// Label, annotation, finalizer and API names of Rancher and Cluster API that this project
// reads or writes, and that the sandbox's stand-ins write as Rancher and Cluster API do.
// A typo silently disables the cleanup gate or the removal, so each lives here once.

// ---- Cluster API ----
export const CAPI_LABEL_CLUSTER_NAME = 'cluster.x-k8s.io/cluster-name';
/** Cluster API's label naming the MachineDeployment: Rancher names it SafeConcatName(cluster, pool). */
export const LABEL_CAPI_DEPLOYMENT = 'cluster.x-k8s.io/deployment-name';
/** Cluster API's pre-terminate lifecycle hook prefix (cluster-api since v0.3.11). */
export const PRE_TERMINATE_HOOK_PREFIX = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/';

// ---- Rancher ----
/** Rancher's label on CAPI Machines (and, copied by Cluster API, their infra machines). */
export const LABEL_RKE_MACHINE_POOL = 'rke.cattle.io/rke-machine-pool-name';
/** Rancher's label on the infra machine naming its CAPI Machine. */
export const LABEL_RKE_CAPI_MACHINE = 'rke.cattle.io/capi-machine-name';
/** The infra machine kind Rancher's Harvester node driver makes. */
export const HARVESTER_MACHINE_GROUP = 'rke-machine.cattle.io';
export const HARVESTER_MACHINE_KIND = 'HarvesterMachine';
/** Rancher's finalizer on the infra machine: held until the rm job removed the VM. */
export const RANCHER_FINALIZER_MACHINE_PROVISION_REMOVE = 'wrangler.cattle.io/machine-provision-remove';
export const RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE = 'provisioning.cattle.io/force-machine-remove';
