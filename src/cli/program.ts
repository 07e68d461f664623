// The harvester-machine command line: commands, global options, help, and the run loop
// that turns any error into a message on stderr and an exit code (exit-codes.ts).
import { Command, CommanderError } from 'commander';
import { CredentialRejectedError } from '../harvester-access/credential-error.js';
import { redact } from '../log/redact.js';
import { registerCreate } from './commands/create.js';
import { registerDoctor } from './commands/doctor.js';
import { registerLeftovers } from './commands/leftovers.js';
import { registerMachineInfo } from './commands/machine-info.js';
import { registerPower } from './commands/power.js';
import { registerRm } from './commands/rm.js';
import { registerVolumes } from './commands/volumes.js';
import { CliContext, type CliIo, type GlobalOptions } from './context.js';
import { ExitWithCode } from './errors.js';
import { EXIT_CODES_HELP, ExitCode, exitCodeFor } from './exit-codes.js';
import { STORE_ENV } from './store/machine-store.js';
import { versionText } from './version.js';

export { VERSION } from './version.js';

export function buildProgram(io: CliIo): Command {
  const program = new Command('harvester-machine');
  const ctx = new CliContext(io, () => program.opts<GlobalOptions>());
  program
    .description(
      'Create and manage Harvester VMs as rancher-machine does, with the Harvester node driver; find and delete the volumes and load balancers deleted guest clusters left behind; check credentials.',
    )
    .version(versionText())
    .option(
      '--store <dir>',
      `machine store (env ${STORE_ENV}; default: $XDG_DATA_HOME/harvester-machine or ~/.local/share/harvester-machine)`,
    )
    .option('--debug', "log the driver's steps on stderr")
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .addHelpText('after', EXIT_CODES_HELP);
  registerCreate(program, ctx);
  registerMachineInfo(program, ctx);
  registerPower(program, ctx);
  registerRm(program, ctx);
  registerVolumes(program, ctx);
  registerLeftovers(program, ctx);
  registerDoctor(program, ctx);
  return program;
}

/** The message for an error, with the one piece of advice that fits its exit code. */
export function errorMessage(err: unknown, code: number): string {
  const message = err instanceof Error ? err.message : String(err);
  if (code === ExitCode.CredentialRejected && !(err instanceof CredentialRejectedError)) {
    return (
      `${message}\nThe credential was rejected (expired or revoked): renew the Harvester cloud credential in Rancher ` +
      '(Cluster Management > Cloud Credentials > Renew), or use a fresh kubeconfig; "harvester-machine doctor" checks one.'
    );
  }
  return message;
}

/** Runs the command line; resolves with the exit code (never throws). */
export async function runCli(io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...io.argv]);
    return ExitCode.Ok;
  } catch (err) {
    const code = exitCodeFor(err);
    // Commander printed its own message (usage errors, --help, --version); ExitWithCode said it all.
    if (!(err instanceof CommanderError) && !(err instanceof ExitWithCode)) {
      io.stderr.write(`Error: ${redact(errorMessage(err, code))}\n`);
    }
    return code;
  }
}
