// Harvester's vm-dhcp-controller add-on (harvester/vm-dhcp-controller at c3042d6,
// docs/upstream/vm-dhcp-controller.md), as run with --no-agent (the sandbox has no node
// for the DHCP agent pods; the guest stand-in asks the IPPool status instead, which is what
// the agent serves). Three controllers, each as upstream registers it:
// - ippool (pkg/controller/ippool): the network's labels naming its pool; BuildCache
//   (CacheReady), which rebuilds the IPAM and MAC cache from the pool's status; Registered
//   and AgentReady (true without an agent); status.ipv4 used/available and the RESERVED
//   (server, router) and EXCLUDED marks in allocated.
// - vm (pkg/controller/vm): a VirtualMachineNetworkConfig per VM with a MAC on a Multus
//   network (from the spec or Harvester's mac-address annotation), owned by the VM; a changed
//   VM marks it out of sync first (InSynced False), then updates its spec.
// - vmnetcfg (pkg/controller/vmnetcfg): Allocate (an address per MAC: the cached one, the
//   one asked for, the one in its status, else a free one; booked in the IPPool's status),
//   Sync (stale MACs released), OnChange (paused: released), OnRemove (everything released).
// Not played: the webhooks (they refuse bad pools and configs the driver never makes), the
// agent pods and metrics. Each controller is a setup beside its reconciler
// (vm-dhcp-ippool.ts, vm-dhcp-vm.ts, vm-dhcp-vmnetcfg.ts), their pure decisions in
// vm-dhcp-decisions.ts, what they share (caches, the IPAM per network) in vm-dhcp-shared.ts.
import { VmDhcpResources } from '../../../src/harvester-access/harvester-api.js';
import type { Controller } from '../../../src/kube/manager.js';
import type { StandInContext } from '../context.js';
import { setupIpPoolController } from './vm-dhcp-ippool.js';
import { vmDhcpShared } from './vm-dhcp-shared.js';
import { setupVmController } from './vm-dhcp-vm.js';
import { setupVmNetCfgController } from './vm-dhcp-vmnetcfg.js';

export { FINALIZER_VMNETCFG } from './vm-dhcp-vmnetcfg.js';
/** The add-on's kinds, as the driver reads them. */
export const VmDhcpTypes = VmDhcpResources;

/** The add-on's three controllers on the stand-ins' manager, sharing their caches and IPAM. */
export function vmDhcpControllers(ctx: StandInContext, random: () => number = Math.random): Controller[] {
  const shared = vmDhcpShared(ctx);
  return [
    setupIpPoolController(ctx, shared),
    setupVmController(ctx, shared),
    setupVmNetCfgController(ctx, shared, random),
  ];
}
