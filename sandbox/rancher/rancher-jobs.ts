// The jobs Rancher's machine provisioning runs for an infra machine (docs/upstream/rancher.md#provisioning-jobs), as the
// stand-in plugs them in: their context (the environment built from the cloud credential when
// the job is built), their record, and Rancher's naming of the credential's variables.
import type { HarvesterMachine as StandInHarvesterMachine } from '../../src/api/capi.js';

export interface JobContext {
  harvesterMachine: StandInHarvesterMachine;
  /** The job pod's environment: HARVESTER_KUBECONFIG_CONTENT, HARVESTER_CLUSTER_ID, HARVESTER_CLUSTER_TYPE. */
  env: Record<string, string>;
  /** The guest (provisioning) cluster's name: `--harvester-cluster-name`. */
  clusterName: string;
  /** 1 for the first run, up to 1 + backoffLimit (rm); always 1 (create: backoffLimit 0). */
  attempt: number;
}
export type RemovalJob = (ctx: JobContext) => Promise<void>;
/** A create job; what it resolves with becomes the guest node's addresses. */
export type CreateJob = (
  ctx: JobContext,
) => Promise<{ addresses?: Array<{ type: string; address: string }> } | void>;
export type RemovalJobContext = JobContext;

export interface JobRun {
  kind: 'create' | 'remove';
  machine: string;
  attempt: number;
  credential: string | undefined;
  startedAt: number;
  ok?: boolean;
  error?: string;
}

/** Rancher's env name for a credential key: `harvestercredentialConfig-kubeconfigContent` → HARVESTER_KUBECONFIG_CONTENT. */
export function credentialEnvName(key: string, driver = 'harvester'): string {
  const field = key.slice(key.lastIndexOf('-') + 1);
  return `${driver}_${field.replace(/([a-z])([A-Z])/g, '$1_$2')}`.toUpperCase();
}

export function credentialEnv(data: Record<string, string> | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(data ?? {}))
    env[credentialEnvName(k)] = Buffer.from(v, 'base64').toString('utf8');
  return env;
}
