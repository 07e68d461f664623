// The slices of Rancher, Cluster API and KubeVirt objects the cleanup controller reads and
// writes. Only what it uses is typed; objects from a server carry more.
import type { KubeObject } from '../kube/resources.js';

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
  spec: { clusterName: string; infrastructureRef: ObjectReference; bootstrap?: unknown };
  status?: { conditions?: CapiCondition[]; phase?: string };
}

export interface CapiCluster extends KubeObject {
  spec?: Record<string, unknown>;
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
  status?: { clusterName?: string; cloudCredentialSecretName?: string };
}

export interface HarvesterMachine extends KubeObject {
  spec?: {
    vmNamespace?: string | null;
    common?: { cloudCredentialSecretName?: string | null } | null;
  };
  status?: {
    cloudCredentialSecretName?: string;
    failureReason?: string;
    failureMessage?: string;
    conditions?: CapiCondition[];
  };
}

export interface SecretObject extends KubeObject {
  type?: string;
  /** base64 values, as the API returns them. */
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

export interface VirtualMachineObject extends KubeObject {
  spec?: unknown;
}
