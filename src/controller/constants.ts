// Names this controller owns or reads: one place, because a typo silently disables the gate.

/** Cluster API's pre-terminate lifecycle hook prefix (cluster-api since v0.3.11). */
export const PRE_TERMINATE_HOOK_PREFIX = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/';
export const DEFAULT_HOOK_NAME = 'harvester-machine-cleanup';
/** The hook's value names its owner, as the Cluster API proposal asks. */
export const HOOK_OWNER = 'harvester-machine-controller';

export const hookAnnotation = (hookName: string): string => `${PRE_TERMINATE_HOOK_PREFIX}${hookName}`;

/** The condition this controller writes on the CAPI Machine (True: nothing holds the gate). */
export const CONDITION_CLEANUP = 'HarvesterVolumeCleanup';

// ---- Rancher ----
export const CREDENTIAL_NAMESPACE = 'cattle-global-data';
export const CREDENTIAL_KEY_KUBECONFIG = 'harvestercredentialConfig-kubeconfigContent';
export const CREDENTIAL_KEY_CLUSTER_ID = 'harvestercredentialConfig-clusterId';
/** Unix milliseconds; set by Rancher 2.9.3+ on expiring Harvester credentials. */
export const ANNOTATION_CREDENTIAL_EXPIRATION = 'rancher.io/expiration-timestamp';
/** Rancher's label on CAPI Machines (and, copied by Cluster API, their infra machines). */
export const LABEL_RKE_MACHINE_POOL = 'rke.cattle.io/rke-machine-pool-name';
/** Cluster API's label naming the MachineDeployment: Rancher names it SafeConcatName(cluster, pool). */
export const LABEL_CAPI_DEPLOYMENT = 'cluster.x-k8s.io/deployment-name';
/** Rancher's label on the infra machine naming its CAPI Machine. */
export const LABEL_RKE_CAPI_MACHINE = 'rke.cattle.io/capi-machine-name';
export const HARVESTER_MACHINE_GROUP = 'rke-machine.cattle.io';
export const HARVESTER_MACHINE_KIND = 'HarvesterMachine';

// ---- Event reasons (one per action; `kubectl get events` is the audit trail) ----
export const Reasons = {
  hookAdded: 'CleanupGateAdded',
  vmAnnotated: 'HarvesterVMAnnotated',
  vmAlreadyAnnotated: 'HarvesterVMAlreadyAnnotated',
  vmGone: 'HarvesterVMNotFound',
  gateReleased: 'CleanupGateReleased',
  gateDeadline: 'CleanupGateDeadlineExceeded',
  credentialRejected: 'HarvesterCredentialRejected',
  credentialMissing: 'HarvesterCredentialMissing',
  harvesterUnreachable: 'HarvesterUnreachable',
  vmAmbiguous: 'HarvesterVMAmbiguous',
  credentialExpired: 'HarvesterCredentialExpired',
  credentialExpiringSoon: 'HarvesterCredentialExpiringSoon',
  credentialMismatch: 'HarvesterCredentialMismatch',
  leaderElected: 'LeaderElected',
  hookRemoved: 'CleanupGateRemoved',
} as const;
