// The slices of Kubernetes, KubeVirt and Harvester objects the driver builds or reads: one
// model for the whole project, defined in src/api/ (the sandbox imports the same).
export type { Condition, KubeObject, ObjectMeta, OwnerReference } from '../api/meta.js';
export type * from '../api/core.js';
export type * from '../api/kubevirt.js';
export type * from '../api/harvester.js';
