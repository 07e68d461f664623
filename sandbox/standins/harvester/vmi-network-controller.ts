// Harvester's VMI network handlers (pkg/controller/master/virtualmachine/
// vmi_network_controller.go, v1.8.0): while a VMI runs, the MAC address of each of its
// interfaces is remembered on the VM (annotation harvesterhci.io/mac-address); when the
// VMI goes (OnRemove "VMController.BackfillObservedNetworkMacAddress", so every VMI
// carries that finalizer), those MACs are written into the VM's interfaces that have
// none, so that a restarted guest keeps the MAC its DHCP lease is bound to.
import { keyOf } from '../../../src/api/object-key.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Annotations, Finalizers } from '../names.js';

import type { VirtualMachine, VirtualMachineInstance } from '../types.js';
import { reconcileFinalizer } from '../finalizer.js';
import { mergePatchWithRetry, refOf, updateWithRetry } from '../writes.js';

export function vmiNetworkController(ctx: StandInContext): Controller {
  const { client } = ctx;
  const vmis = ctx.manager.cache<VirtualMachineInstance>({ type: Resources.virtualMachineInstance });
  const vms = ctx.manager.cache<VirtualMachine>({ type: Resources.virtualMachine });

  async function rememberMacs(vmi: VirtualMachineInstance, vm: VirtualMachine): Promise<void> {
    const macs: Record<string, string> = {};
    for (const iface of vmi.status?.interfaces ?? [])
      if (iface.mac && iface.name) macs[iface.name] = iface.mac;
    const sorted = Object.fromEntries(Object.entries(macs).sort(([a], [b]) => (a < b ? -1 : 1)));
    const value = JSON.stringify(sorted); // what Go's json.Marshal of a map gives
    await mergePatchWithRetry(client, Resources.virtualMachine, vm, refOf(vm), (fresh) =>
      fresh.metadata.annotations?.[Annotations.macAddress] === value
        ? undefined
        : { metadata: { annotations: { [Annotations.macAddress]: value } } },
    );
  }

  async function backfillMacs(vmi: VirtualMachineInstance): Promise<void> {
    const key = keyOf(vmi);
    const vm = vms.get(key);
    if (!vm) throw new Error(`virtualmachine.kubevirt.io "${vmi.metadata.name}" not found`);
    // No need to touch a VM that is going too.
    if (!vm.metadata.deletionTimestamp && vm.metadata.annotations?.[Annotations.macAddress] !== undefined) {
      await updateWithRetry(client, Resources.virtualMachine, vm, refOf(vm), (fresh) => {
        const raw = fresh.metadata.annotations?.[Annotations.macAddress];
        if (raw === undefined || fresh.metadata.deletionTimestamp) return undefined;
        const observed = JSON.parse(raw) as Record<string, string>;
        let changed = false;
        for (const iface of fresh.spec.template.spec.domain.devices?.interfaces ?? []) {
          const mac = observed[iface.name];
          if (iface.macAddress || mac === undefined) continue;
          iface.macAddress = mac;
          changed = true;
        }
        return changed ? fresh : undefined;
      });
    }
  }

  return ctx.manager
    .controller('harvester-vmi-network', {
      reconcile: async (key) => {
        const vmi = vmis.get(key);
        if (!vmi) return;
        const step = await reconcileFinalizer(
          client,
          Resources.virtualMachineInstance,
          vmi,
          Finalizers.harvesterVmiMacBackfill,
          backfillMacs,
        );
        if (step !== 'present') return;
        const vm = vms.get(key);
        if (vm && vmi.status?.phase === 'Running' && (vmi.status.interfaces ?? []).length > 0)
          await rememberMacs(vmi, vm);
      },
      logger: ctx.logger.child({ controller: 'harvester-vmi-network' }),
    })
    .watch(vmis);
}
