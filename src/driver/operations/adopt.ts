// A create that died half-way leaves a VM behind; running create again must finish it,
// not fail or make a second one. A VM counts as ours only when every identifying label
// the Go driver sets matches this machine.
import { CREATOR, LABEL_CREATOR, LABEL_GUEST_CLUSTER_NAME, LABEL_VM_NAME } from '../../harvester/labels.js';
import type { GoDriverConfig } from '../../harvester/config/go-config.js';
import type { Vm } from '../../harvester-access/harvester-api.js';

export function isOurAbandonedVm(vm: Vm, cfg: GoDriverConfig): boolean {
  const labels = vm.metadata.labels ?? {};
  return (
    !vm.metadata.deletionTimestamp &&
    labels[LABEL_CREATOR] === CREATOR &&
    labels[LABEL_VM_NAME] === cfg.MachineName &&
    (cfg.ClusterName === '' || labels[LABEL_GUEST_CLUSTER_NAME] === cfg.ClusterName)
  );
}
