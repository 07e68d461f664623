// The lifecycle's waits, all on the one watch-based waitFor: each names what it waits
// for and reports the state it last saw, in the job log (wait-log.ts), in progress
// events and in its timeout error. Each first prints the Go driver's line for it
// ("Waiting for node become Running", …), which Rancher's job log has always shown.
import {
  FINALIZER_FOREGROUND_DELETION,
  FINALIZER_HARVESTER_VM_CLEANUP,
  FINALIZER_KUBEVIRT_VM,
} from '../../harvester/labels.js';
import {
  ipState,
  NO_VM_INSTANCE,
  startState,
  stopState,
  vmStatusState,
} from '../../harvester/vm-progress.js';
import { allocationOf, type VmNetworkConfig } from '../../harvester/fixed-addresses/vm-dhcp.js';
import type { WaitSpec } from '../../kube/wait.js';
import type { KubeObject } from '../../kube/resources.js';
import type { Vm, Vmi, WaitKind } from '../../harvester-access/harvester-api.js';
import { addressesOf } from './machine-status.js';
import { seconds, vmRef, type OperationContext } from './context.js';
import { DEFAULT_PROGRESS_INTERVAL_MS, WaitLog } from './wait-log.js';

type LoggedWait<T extends KubeObject> = Omit<
  WaitSpec<T>,
  'onProgress' | 'description' | 'type' | 'name' | 'namespace'
> & {
  description?: string;
};

/** One wait on the machine's VM or VM instance, with its job log and progress events. */
async function loggedWait<T extends KubeObject>(
  ctx: OperationContext,
  operation: string,
  waitingFor: string,
  kind: WaitKind,
  spec: LoggedWait<T>,
): Promise<T | undefined> {
  const { VMNamespace: namespace, MachineName: name } = ctx.config;
  const log = new WaitLog({
    log: ctx.log,
    waitingFor,
    intervalMs: ctx.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS,
    // Without an instance only the VM says why (a refused or pending instance creation).
    probe: async (state) =>
      state === NO_VM_INSTANCE ? vmStatusState(await ctx.api.findVm(namespace, name)) : undefined,
  });
  try {
    return await ctx.api.wait<T>(kind, {
      ...spec,
      namespace,
      name,
      description: spec.description ?? waitingFor,
      onProgress: (state, elapsedMs) => {
        log.observe(state);
        ctx.progress?.({ operation, waitingFor, state, elapsedMs });
      },
    });
  } finally {
    log.stop();
  }
}

/** Running (the Go driver's waitForState(Running)); `from` is a VM instance just read. */
export async function waitRunning(ctx: OperationContext, operation: string, from?: Vmi): Promise<Vmi> {
  ctx.log.info('Waiting for node become Running');
  const vmi = await loggedWait<Vmi>(ctx, operation, `VM ${vmRef(ctx.config)} to be Running`, 'vmi', {
    timeoutMs: seconds(ctx.config.HarvesterMachine.CreateTimeoutSeconds),
    until: (o) => o?.status?.phase === 'Running' && !o.metadata.deletionTimestamp,
    describeState: (o) => startState(o),
    ...(from ? { from } : {}),
  });
  return vmi as Vmi;
}

/** A VM instance other than `oldUid` (the Go driver's waitForRestart, before Running). */
export async function waitRestarted(
  ctx: OperationContext,
  operation: string,
  oldUid: string | undefined,
): Promise<Vmi> {
  ctx.log.info('Waiting for node restarted');
  const vmi = await loggedWait<Vmi>(ctx, operation, `VM ${vmRef(ctx.config)} to run a new instance`, 'vmi', {
    timeoutMs: seconds(ctx.config.HarvesterMachine.CreateTimeoutSeconds),
    until: (o) => o !== undefined && o.metadata.uid !== oldUid && !o.metadata.deletionTimestamp,
    describeState: (o) => startState(o, oldUid),
  });
  return vmi as Vmi;
}

/** The node IP reported by the guest agent (on the chosen network); `from` is a VM instance just read. */
export async function waitForIp(ctx: OperationContext, operation: string, from?: Vmi): Promise<Vmi> {
  ctx.log.info('Waiting for node get ip');
  const network = ctx.config.HarvesterMachine.IPNetwork;
  const waitingFor = `VM ${vmRef(ctx.config)} to report an IP address${network ? ` on ${network}` : ''}`;
  const vmi = await loggedWait<Vmi>(ctx, operation, waitingFor, 'vmi', {
    description: `${waitingFor} (reported by qemu-guest-agent in the guest)`,
    timeoutMs: seconds(ctx.config.HarvesterMachine.IPTimeoutSeconds),
    until: (o) => {
      const a = addressesOf(ctx, o);
      return Boolean(a?.ipv4 ?? a?.ipv6);
    },
    describeState: ipState,
    ...(from ? { from } : {}),
  });
  return vmi as Vmi;
}

/**
 * The address Harvester's IP pool binds to the VM's MAC: vm-dhcp-controller makes the VM's
 * VirtualMachineNetworkConfig when the VM appears and allocates from the pool. A full pool
 * ends the wait at once with the add-on's own words.
 */
export async function waitForPoolAddress(
  ctx: OperationContext,
  mac: string,
  ipPool: string,
  vm: Vm,
): Promise<string> {
  ctx.log.info(`Waiting for Harvester's IP pool ${ipPool} to bind an address to ${mac}`);
  const waitingFor = `Harvester's IP pool ${ipPool} to give VM ${vmRef(ctx.config)} (MAC ${mac}) an address`;
  let refused: string | undefined;
  const cfg = await loggedWait<VmNetworkConfig & KubeObject>(ctx, 'create', waitingFor, 'vmNetworkConfig', {
    description: `${waitingFor} (its VirtualMachineNetworkConfig, made by vm-dhcp-controller)`,
    timeoutMs: seconds(ctx.config.HarvesterMachine.IPTimeoutSeconds),
    until: (o) => {
      const a = allocationOf(o, mac);
      if (a && 'refused' in a) refused = a.refused;
      return a !== undefined && !('waiting' in a);
    },
    describeState: (o) => {
      const a = allocationOf(o, mac);
      if (!o) return 'no VirtualMachineNetworkConfig yet';
      if (!a) return 'VirtualMachineNetworkConfig without an allocation yet';
      return 'address' in a
        ? `bound to ${a.address}`
        : 'refused' in a
          ? `refused: ${a.refused}`
          : `pending: ${a.waiting}`;
    },
  });
  const allocation = allocationOf(cfg, mac);
  if (allocation && 'address' in allocation) return allocation.address;
  throw new Error(
    `--harvester-ip-pool-info: Harvester's IP pool ${ipPool} gave VM ${vmRef(ctx.config)} no address: ${refused ?? 'no allocation'} (VM ${vm.metadata.name ?? ''} is left for Remove)`,
  );
}

export async function waitStopped(ctx: OperationContext, operation: string): Promise<void> {
  ctx.log.info('Waiting for node become Stopped');
  await loggedWait<Vmi>(ctx, operation, `VM ${vmRef(ctx.config)} to be Stopped`, 'vmi', {
    timeoutMs: seconds(ctx.config.HarvesterMachine.CreateTimeoutSeconds),
    until: (o) => o === undefined,
    describeState: stopState,
  });
}

/** Who is behind the finalizers a VM can be stuck on, for the operator reading the error. */
const FINALIZER_MEANING: Record<string, string> = {
  [FINALIZER_FOREGROUND_DELETION]:
    'its dependents (the VM instance, the cloud-init Secret) are still being deleted',
  [FINALIZER_HARVESTER_VM_CLEANUP]:
    "Harvester's VM controller has not finished deleting its volumes and snapshots",
  [FINALIZER_KUBEVIRT_VM]: "KubeVirt's VM controller has not finished",
};

function describeFinalizer(name: string): string {
  const meaning = FINALIZER_MEANING[name];
  return meaning ? `${name} (${meaning})` : name;
}

function describeVmRemoval(vm: Vm | undefined): string {
  if (!vm) return 'gone';
  if (!vm.metadata.deletionTimestamp) return 'not marked for deletion';
  const finalizers = vm.metadata.finalizers ?? [];
  return finalizers.length > 0
    ? `still terminating, held by finalizer${finalizers.length === 1 ? '' : 's'} ${finalizers.map(describeFinalizer).join(', ')}`
    : 'terminating';
}

export async function waitVmGone(
  ctx: OperationContext,
  operation: string,
  uid: string | undefined,
  /** The VM as the delete answered it: watched from, instead of listed again. */
  deleting?: Vm,
): Promise<void> {
  await loggedWait<Vm>(ctx, operation, `VM ${vmRef(ctx.config)} to be removed`, 'vm', {
    timeoutMs: seconds(ctx.config.HarvesterMachine.RemoveTimeoutSeconds),
    // A new VM of the same name (recreated by someone) does not keep us waiting.
    until: (o) => o === undefined || (uid !== undefined && o.metadata.uid !== uid),
    describeState: describeVmRemoval,
    ...(deleting ? { from: deleting } : {}),
  });
}
