// What every lifecycle operation gets: the config (which Create updates), the Harvester
// API under the freshest credential, a logger, and a progress callback for waits.
import type { KubeconfigTrust } from '../../kube/credential-content.js';
import type { Logger } from '../../log/logger.js';
import type { DriverConfig } from '../config/index.js';
import type { HarvesterApi } from '../../harvester-access/harvester-api.js';
import type { SshKeyPair } from '../ssh-keys.js';
import { keyText } from '../../api/object-key.js';

export interface ProgressEvent {
  /** "create", "remove", ... */
  operation: string;
  /** What is being waited for: "VM default/m1 to be Running". */
  waitingFor: string;
  /** The last state seen: "VMI phase Scheduling". */
  state: string;
  elapsedMs: number;
}

export interface OperationContext {
  config: DriverConfig;
  api: HarvesterApi;
  log: Logger;
  progress?: (event: ProgressEvent) => void;
  /** How often a wait without news logs a "Still waiting" line (default 15 s). */
  progressIntervalMs?: number;
  /** Where the machine's SSH private key lives (BaseDriver.GetSSHKeyPath). */
  sshKeyPath: string;
  /** Whose the kubeconfig content is: a cloud credential's (the plugin) or the operator's (the CLI). */
  kubeconfigTrust: KubeconfigTrust;
  /** A new SSH key pair for Create; the driver may have started making it during PreCreateCheck. */
  newSshKey?: () => Promise<SshKeyPair>;
}

export const seconds = (s: number): number => s * 1000;

export function vmRef(cfg: DriverConfig): string {
  return keyText(cfg.VMNamespace, cfg.MachineName);
}
