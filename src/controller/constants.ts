// Names this controller owns: one place, because a typo silently disables the gate.
// (The Rancher and Cluster API names it reads are in rancher/.)
import { PRE_TERMINATE_HOOK_PREFIX } from '../rancher/labels.js';

export const DEFAULT_HOOK_NAME = 'harvester-machine-cleanup';
/** The hook's value names its owner, as the Cluster API proposal asks. */
export const HOOK_OWNER = 'harvester-machine-controller';

/**
 * The label the chart's default --credential-label-selector selects Harvester cloud
 * credentials by: no label of Rancher's tells them
 * from other drivers' credentials.
 */
export const CREDENTIAL_LABEL = 'harvester-machine.io/credential';

/** What a "no credential found" failure adds: with a selector, an unlabelled one is not seen. */
export const UNSEEN_CREDENTIAL_HINT = `a credential the controller does not watch is not found either: with --credential-label-selector (the chart's default ${CREDENTIAL_LABEL}=true) label it, kubectl -n cattle-global-data label secret <name> ${CREDENTIAL_LABEL}=true`;

export const hookAnnotation = (hookName: string): string => `${PRE_TERMINATE_HOOK_PREFIX}${hookName}`;

/** The condition this controller writes on the CAPI Machine (True: nothing holds the gate). */
export const CONDITION_CLEANUP = 'HarvesterVolumeCleanup';

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
  credentialInvalid: 'HarvesterCredentialInvalid',
  harvesterUnreachable: 'HarvesterUnreachable',
  vmAmbiguous: 'HarvesterVMAmbiguous',
  credentialExpired: 'HarvesterCredentialExpired',
  credentialExpiringSoon: 'HarvesterCredentialExpiringSoon',
  credentialMismatch: 'HarvesterCredentialMismatch',
  leaderElected: 'LeaderElected',
  hookRemoved: 'CleanupGateRemoved',
} as const;

/**
 * The default of `--guest-max-volumes`: PVs of the Harvester CSI driver kept per guest. Slimmed
 * PVs are small, so a guest at the bound stays small beside the controller's heap; the bound is
 * far past what a Harvester cluster serves one guest (and it is a flag), while a relist at the
 * bound is a few dozen list pages.
 */
export const DEFAULT_GUEST_MAX_VOLUMES = 2_000;
