// Start, Stop, Restart, Kill through KubeVirt's subresource API, each idempotent:
// starting a running VM or stopping a stopped one is success, not an error.
import { isConflict } from '../../kube/errors.js';
import type { VmAction } from '../../harvester-access/harvester-api.js';
import { vmRef, type OperationContext } from './context.js';
import { fixedIsNodeAddress } from './machine-status.js';
import { waitForIp, waitRestarted, waitRunning, waitStopped } from './waits.js';

async function requireVm(ctx: OperationContext): Promise<void> {
  const vm = await ctx.api.findVm(ctx.config.VMNamespace, ctx.config.MachineName);
  if (!vm) throw new Error(`VM ${vmRef(ctx.config)} does not exist in Harvester ${ctx.api.server}`);
}

/** virt-api answers 409 when the VM already is where the action would take it. */
async function action(ctx: OperationContext, verb: VmAction): Promise<'done' | 'already'> {
  try {
    await ctx.api.vmAction(ctx.config.VMNamespace, ctx.config.MachineName, verb);
    return 'done';
  } catch (err) {
    if (isConflict(err)) {
      ctx.log.debug(`${verb}: ${err.message}`);
      return 'already';
    }
    throw err;
  }
}

export async function startMachine(ctx: OperationContext): Promise<void> {
  ctx.log.info('Start node');
  await requireVm(ctx);
  await action(ctx, 'start');
  const running = await waitRunning(ctx, 'start');
  // A fixed address is known: no need to wait for the guest agent to report it.
  if (!fixedIsNodeAddress(ctx)) await waitForIp(ctx, 'start', running);
}

export async function stopMachine(ctx: OperationContext): Promise<void> {
  ctx.log.info('Stop node');
  await requireVm(ctx);
  await action(ctx, 'stop');
  await waitStopped(ctx, 'stop');
}

export async function restartMachine(ctx: OperationContext): Promise<void> {
  ctx.log.info('Restart node');
  await requireVm(ctx);
  const vmi = await ctx.api.findVmi(ctx.config.VMNamespace, ctx.config.MachineName);
  if (!vmi) {
    // Nothing runs: a restart is a start (virt-api would answer 409).
    await startMachine(ctx);
    return;
  }
  await action(ctx, 'restart');
  // As the Go driver: a new instance first, then Running, then an IP, each its own line.
  const fresh = await waitRestarted(ctx, 'restart', vmi.metadata.uid);
  const running = await waitRunning(ctx, 'restart', fresh);
  if (!fixedIsNodeAddress(ctx)) await waitForIp(ctx, 'restart', running);
}

/** The Go driver's Kill is Stop. */
export const killMachine = stopMachine;
