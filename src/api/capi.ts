// Cluster API's and Rancher's provisioning objects (cluster.x-k8s.io v1beta1,
// provisioning.cattle.io v1, rke-machine.cattle.io v1) as the controller and Rancher's
// stand-in read and write them: only the fields used; servers send more.
import type { KubeObject } from './meta.js';

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  namespace?: string;
}

/** cluster.x-k8s.io/v1beta1 condition, as Cluster API writes them. */
export interface CapiCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  severity?: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface CapiMachine extends KubeObject {
  spec: {
    clusterName: string;
    infrastructureRef: ObjectReference;
    bootstrap?: { dataSecretName?: string; [field: string]: unknown };
  };
  status?: { conditions?: CapiCondition[]; phase?: string };
}

export interface CapiCluster extends KubeObject {
  spec?: Record<string, unknown>;
  status?: { infrastructureReady?: boolean; [field: string]: unknown };
}

export interface MachinePool {
  name: string;
  cloudCredentialSecretName?: string | null;
  machineConfigRef?: ObjectReference;
  quantity?: number | null;
}

export interface ProvisioningCluster extends KubeObject {
  spec?: {
    cloudCredentialSecretName?: string | null;
    rkeConfig?: { machinePools?: MachinePool[] | null; chartValues?: unknown } | null;
  };
  status?: {
    clusterName?: string;
    cloudCredentialSecretName?: string;
    /** Set by Rancher in the reconcile that writes `<cluster>-kubeconfig` (its name). */
    clientSecretName?: string;
  };
}

/** rke-machine.cattle.io/v1 HarvesterMachine: the infrastructure machine Rancher provisions. */
export interface HarvesterMachine extends KubeObject {
  spec?: {
    vmNamespace?: string | null;
    providerID?: string | null;
    common?: { cloudCredentialSecretName?: string | null } | null;
  };
  status?: {
    cloudCredentialSecretName?: string;
    failureReason?: string;
    failureMessage?: string;
    conditions?: CapiCondition[];
    ready?: boolean;
    jobName?: string;
    addresses?: Array<{ type: string; address: string }>;
  };
}

export interface SecretObject extends KubeObject {
  type?: string;
  /** base64 values, as the API returns them. */
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
