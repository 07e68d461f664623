// start, stop, restart: the driver's operations (idempotent: starting a running machine
// succeeds), with the progress display while they wait.
import type { Command } from 'commander';
import { MachineState } from '../../driver/machine-driver.js';
import type { CliContext } from '../context.js';
import { MachineNotFoundError } from '../errors.js';
import { openMachine, vmRefOf, type FreshCredentialOptions } from '../machines.js';
import { addMachineCredentialOptions } from './machine-info.js';

type Action = 'start' | 'stop' | 'restart';

const DONE: Record<Action, string> = { start: 'started', stop: 'stopped', restart: 'restarted' };
const DOING: Record<Action, string> = { start: 'starting', stop: 'stopping', restart: 'restarting' };

async function power(
  ctx: CliContext,
  action: Action,
  name: string,
  opts: FreshCredentialOptions,
): Promise<void> {
  const progress = ctx.progress();
  const { driver } = await openMachine(ctx, name, { fresh: opts, progress });
  try {
    progress.phase(`${DOING[action]} VM ${vmRefOf(driver)}`);
    if ((await driver.getState()) === MachineState.NotFound) {
      throw new MachineNotFoundError(
        `VM ${vmRefOf(driver)} of machine ${name} no longer exists on Harvester ("harvester-machine rm ${name}" forgets it)`,
      );
    }
    await driver[action]();
    progress.stop();
    const ip = action === 'stop' ? '' : await driver.getIP().catch(() => '');
    ctx.out(`Machine ${name} ${DONE[action]}${ip ? ` (IP ${ip})` : ''}`);
  } finally {
    progress.stop();
    driver.close();
  }
}

export function registerPower(program: Command, ctx: CliContext): void {
  for (const action of ['start', 'stop', 'restart'] as const) {
    addMachineCredentialOptions(
      program
        .command(action)
        .description(
          `${action} a machine's VM and wait until it is ${action === 'stop' ? 'stopped' : 'running with an IP'}`,
        )
        .argument('<name>'),
    ).action((name: string, opts: FreshCredentialOptions) => power(ctx, action, name, opts));
  }
}
