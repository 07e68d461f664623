// The lifecycle's waits, all on the one watch-based waitFor: each names what it waits
// for and reports the state it last saw, in progress events and in its timeout error.
import {
  FINALIZER_FOREGROUND_DELETION,
  FINALIZER_HARVESTER_VM_CLEANUP,
  FINALIZER_KUBEVIRT_VM,
} from '../../harvester/labels.js';
import { Resources } from '../../kube/resources.js';
import type { Vm, Vmi } from '../harvester-api.js';
import { addressesOf } from './machine-status.js';
import { seconds, vmRef, type OperationContext } from './context.js';

function describeVmi(vmi: Vmi | undefined): string {
  if (!vmi) return 'no VM instance yet';
  const phase = vmi.status?.phase || 'no phase yet';
  return vmi.metadata.deletionTimestamp ? `VM instance ${phase}, being deleted` : `VM instance ${phase}`;
}

function progress(ctx: OperationContext, operation: string, waitingFor: string) {
  return (state: string, elapsedMs: number): void => {
    ctx.log.debug(`${waitingFor}: ${state}`, { elapsedMs });
    ctx.progress?.({ operation, waitingFor, state, elapsedMs });
  };
}

/** Running, optionally a different instance than `notUid` (restart). */
export async function waitRunning(ctx: OperationContext, operation: string, notUid?: string): Promise<Vmi> {
  const { VMNamespace: namespace, MachineName: name } = ctx.config;
  const waitingFor = `VM ${vmRef(ctx.config)} to be Running${notUid ? ' as a new instance' : ''}`;
  const vmi = await ctx.api.wait<Vmi>({
    type: Resources.virtualMachineInstance,
    namespace,
    name,
    description: waitingFor,
    timeoutMs: seconds(ctx.config.HarvesterMachine.CreateTimeoutSeconds),
    until: (o) =>
      o?.status?.phase === 'Running' && !o.metadata.deletionTimestamp && o.metadata.uid !== notUid,
    describeState: (o) =>
      o && notUid && o.metadata.uid === notUid ? 'the old VM instance is still there' : describeVmi(o),
    onProgress: progress(ctx, operation, waitingFor),
  });
  return vmi as Vmi;
}

/** The node IP reported by the guest agent (on the chosen network). */
export async function waitForIp(ctx: OperationContext, operation: string): Promise<Vmi> {
  const { VMNamespace: namespace, MachineName: name } = ctx.config;
  const network = ctx.config.HarvesterMachine.IPNetwork;
  const waitingFor = `VM ${vmRef(ctx.config)} to report an IP address${network ? ` on ${network}` : ''}`;
  const vmi = await ctx.api.wait<Vmi>({
    type: Resources.virtualMachineInstance,
    namespace,
    name,
    description: `${waitingFor} (reported by qemu-guest-agent in the guest)`,
    timeoutMs: seconds(ctx.config.HarvesterMachine.IPTimeoutSeconds),
    until: (o) => {
      const a = addressesOf(ctx, o);
      return Boolean(a?.ipv4 ?? a?.ipv6);
    },
    describeState: (o) =>
      o
        ? `${describeVmi(o)}, ${(o.status?.interfaces ?? []).length} interface(s) reported, none with a usable address`
        : describeVmi(o),
    onProgress: progress(ctx, operation, waitingFor),
  });
  return vmi as Vmi;
}

export async function waitStopped(ctx: OperationContext, operation: string): Promise<void> {
  const { VMNamespace: namespace, MachineName: name } = ctx.config;
  const waitingFor = `VM ${vmRef(ctx.config)} to be Stopped`;
  await ctx.api.wait<Vmi>({
    type: Resources.virtualMachineInstance,
    namespace,
    name,
    description: waitingFor,
    timeoutMs: seconds(ctx.config.HarvesterMachine.CreateTimeoutSeconds),
    until: (o) => o === undefined,
    describeState: describeVmi,
    onProgress: progress(ctx, operation, waitingFor),
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
  const { VMNamespace: namespace, MachineName: name } = ctx.config;
  const waitingFor = `VM ${vmRef(ctx.config)} to be removed`;
  await ctx.api.wait<Vm>({
    type: Resources.virtualMachine,
    namespace,
    name,
    description: waitingFor,
    timeoutMs: seconds(ctx.config.HarvesterMachine.RemoveTimeoutSeconds),
    // A new VM of the same name (recreated by someone) does not keep us waiting.
    until: (o) => o === undefined || (uid !== undefined && o.metadata.uid !== uid),
    describeState: describeVmRemoval,
    onProgress: progress(ctx, operation, waitingFor),
    ...(deleting ? { from: deleting } : {}),
  });
}
