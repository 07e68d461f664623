// vm-dhcp-controller's vm controller (pkg/controller/vm): a VirtualMachineNetworkConfig per VM
// with a MAC on a Multus network, owned by the VM; a changed VM marks it out of sync first
// (InSynced False), then updates its spec.
import { isKubeError } from '../../../src/kube/errors.js';
import { VmDhcpResources } from '../../../src/harvester-access/harvester-api.js';
import type { Controller } from '../../../src/kube/manager.js';
import type { ObjectKey } from '../../../src/api/object-key.js';
import type { StandInContext } from '../context.js';
import { sameJson } from '../runtime.js';
import { refOf, updateWithRetry } from '../writes.js';
import {
  conditionIs,
  networkConfigOfVm,
  networkConfigsOf,
  outOfSyncStatus,
  type NetCfg,
} from './vm-dhcp-decisions.js';
import type { VmDhcpShared } from './vm-dhcp-shared.js';

export function setupVmController(ctx: StandInContext, shared: VmDhcpShared): Controller {
  const { client } = ctx;
  const { vms, cfgs } = shared;

  async function reconcile(key: ObjectKey): Promise<void> {
    const vm = vms.get(key);
    if (!vm || vm.metadata.deletionTimestamp) return;
    const networkConfigs = networkConfigsOf(vm);
    if (networkConfigs.length === 0) return;
    const existing = cfgs.get(key);
    if (!existing) {
      await client
        .create<NetCfg>(VmDhcpResources.networkConfig, networkConfigOfVm(vm, networkConfigs))
        .catch((err: unknown) => {
          // The cache has not seen it yet: the next event of the config brings it.
          if (!isKubeError(err, 'AlreadyExists')) throw err;
        });
      return;
    }
    if (sameJson(existing.spec?.networkConfigs ?? [], networkConfigs)) return;
    if (conditionIs(existing.status?.conditions, 'InSynced', 'False')) {
      await updateWithRetry(client, VmDhcpResources.networkConfig, existing, refOf(existing), (c) => ({
        ...c,
        spec: { ...c.spec, vmName: c.spec?.vmName ?? '', networkConfigs },
      }));
      return;
    }
    await updateWithRetry(
      client,
      VmDhcpResources.networkConfig,
      existing,
      refOf(existing),
      (c) => ({ ...c, status: outOfSyncStatus(c.status) }),
      'status',
    );
    controller.enqueue(key);
  }

  const controller = ctx.manager
    .controller('vm-dhcp-vm', {
      reconcile,
      logger: ctx.logger.child({ controller: 'vm-dhcp-controller' }).child({ part: 'vm' }),
    })
    .watch(vms);
  return controller;
}
