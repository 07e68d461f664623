// The machine cleanup's one write on Harvester: the machine's VM found (plain name, Rancher's
// hashed name, then labels) and marked so that Harvester deletes its volumes with it. Every
// call goes through the Harvester access module (src/harvester-access).
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../harvester/labels.js';
import { HarvesterApi, type Vm } from '../../harvester-access/harvester-api.js';
import { isNotFound, type KubeClient } from '../../kube/index.js';
import type { CleanupOutcome } from './gate-decision.js';
import { guestClusterSelector, matchVmByLabels, vmNameCandidates } from '../common/vm-lookup.js';
import { keyTextOf } from '../../api/object-key.js';

/**
 * Finds the machine's VM (plain name, Rancher's hashed name, then labels) and sets
 * removeAllPersistentVolumeClaims=true with a merge patch of that one key: unlike
 * Rancher's full Update it cannot overwrite a concurrent change by Harvester's controller.
 * Throws KubeError (credential rejected, unreachable...) for the caller to classify.
 */
export async function annotateMachineVm(
  client: KubeClient,
  input: { vmNamespace: string; machineName: string; clusterName: string },
): Promise<CleanupOutcome> {
  const { vmNamespace, machineName, clusterName } = input;
  const api = new HarvesterApi(client);
  const names = vmNameCandidates(machineName);
  for (const [i, name] of names.entries()) {
    const vm = await api.findVm(vmNamespace, name);
    if (vm) return annotate(api, vm, i === 0 ? 'name' : "Rancher's hashed name");
  }
  const vms = await api.listVms(vmNamespace, guestClusterSelector(clusterName));
  const match = matchVmByLabels(vms, machineName, clusterName);
  switch (match.kind) {
    case 'found':
      return annotate(
        api,
        { ...match.vm, metadata: { ...match.vm.metadata, namespace: vmNamespace } },
        match.how,
      );
    case 'ambiguous':
      return {
        kind: 'failed',
        reason: 'HarvesterVMAmbiguous',
        message: `more than one VM in ${vmNamespace} could be machine ${machineName}: ${match.names.join(', ')}; annotate the right one by hand (${ANNOTATION_REMOVE_ALL_PVCS}="true")`,
      };
    case 'none':
      return {
        kind: 'vm-gone',
        looked: `${vmNamespace}/{${names.join(',')}} and VMs labelled ${guestClusterSelector(clusterName)}`,
      };
  }
}

async function annotate(api: HarvesterApi, vm: Vm, how: string): Promise<CleanupOutcome> {
  const ref = keyTextOf(vm);
  const current = vm.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS];
  // As Rancher: an existing value is left alone, so a VM marked "false" by hand keeps its volumes.
  if (current !== undefined)
    return {
      kind: 'already-annotated',
      vm: current === 'true' ? ref : `${ref} (value "${current}", left as is)`,
    };
  try {
    // Whatever version of the VM: only this one key is set.
    await api.patchVmAnnotations(vm, { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' }, { anyVersion: true });
    return { kind: 'annotated', vm: ref, how };
  } catch (err) {
    if (isNotFound(err)) return { kind: 'vm-gone', looked: ref };
    throw err;
  }
}
