// The metadata every Kubernetes object carries, once for the whole project (the JSON names of
// apimachinery's meta/v1). A stored object always has a name; only a create may leave it to
// the server (generateName) or have none at all (reviews): that is NewObject.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/** The body of a create: the name may be left to the server (generateName) or absent (reviews). */
export type NewObject<T extends KubeObject> = Omit<T, 'metadata'> & {
  metadata: Omit<T['metadata'], 'name'> & { name?: string };
};

export interface ObjectList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

/** A status condition (core/v1, KubeVirt and Harvester write the same shape). */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastProbeTime?: string | null;
  lastTransitionTime?: string | null;
  lastUpdateTime?: string;
}
