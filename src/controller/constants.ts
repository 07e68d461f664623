// Names this controller owns: one place, because a typo silently disables the gate.
// (The Rancher and Cluster API names it reads are in rancher/.)
import { PRE_TERMINATE_HOOK_PREFIX } from '../rancher/labels.js';

export const DEFAULT_HOOK_NAME = 'harvester-machine-cleanup';
/** The hook's value names its owner, as the Cluster API proposal asks. */
export const HOOK_OWNER = 'harvester-machine-controller';

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
