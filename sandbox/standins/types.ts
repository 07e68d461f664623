// The shapes of the objects the stand-ins read and write: the project's one model (src/api/),
// under the names the stand-ins use. Everything else is carried through untouched (the CRDs
// preserve unknown fields).
export type { Condition } from '../../src/api/meta.js';
export type { PersistentVolumeClaim, Pod, StorageClass } from '../../src/api/core.js';
export type {
  Disk,
  Interface,
  RunStrategy,
  StateChangeRequest,
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceSpec as VmiSpec,
  VirtualMachineInstanceStatus as VmiStatus,
  VirtualMachineStatus as VmStatus,
  VMIPhase as VmiPhase,
  VMINetworkInterfaceStatus as VmiInterfaceStatus,
  VMIVolumeStatus as VolumeStatus,
  Volume,
} from '../../src/api/kubevirt.js';
export type { KeyPair, VirtualMachineImage } from '../../src/api/harvester.js';
export type { Condition as HarvesterCondition } from '../../src/api/meta.js';
