// The slices of Rancher, Cluster API and Kubernetes objects the cleanup controller reads and
// writes: the project's one model (src/api/).
import type { KubeObject } from '../../api/meta.js';

export type * from '../../api/capi.js';

/** A Secret as the controller caches it (cloud credentials). */
export type { Secret as SecretObject } from '../../api/core.js';

export interface VirtualMachineObject extends KubeObject {
  spec?: unknown;
}
