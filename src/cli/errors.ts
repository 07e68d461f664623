// Errors the CLI raises itself. Each one carries the exit code a script can rely on
// (exit-codes.ts); errors from the driver and the Kubernetes layer are mapped there too.

/** Bad input: a flag, an argument, a missing confirmation. Exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** No machine of that name in the local store, or its VM is gone from Harvester. Exit code 4. */
export class MachineNotFoundError extends Error {
  override readonly name = 'MachineNotFoundError';
}

/**
 * A command that already told the user everything (doctor's failed checks, a partial
 * volume deletion) and only has to end with this exit code.
 */
export class ExitWithCode extends Error {
  override readonly name = 'ExitWithCode';
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}
