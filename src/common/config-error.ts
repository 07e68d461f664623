// The one error for a configuration that cannot be used, thrown by the driver's flag checks
// and by the controller's flag parsing alike, so every front recognises it by one class.

/** One problem of a driver config: the flag it is about and the whole sentence. */
export interface ConfigProblem {
  /** The flag the problem is about, e.g. "--harvester-disk-info". */
  flag: string;
  /** The whole sentence: "<flag>: <what is wrong and what is expected>". */
  message: string;
}

/**
 * Invalid configuration. Given the problems of a machine configuration, it lists every one,
 * each naming its flag; given a message (the controller's flags), it says just that.
 */
export class ConfigError extends Error {
  override readonly name: string = 'ConfigError';
  /** The problems listed; empty when the error was given a message. */
  readonly problems: readonly ConfigProblem[];
  constructor(problems: readonly ConfigProblem[] | string) {
    super(typeof problems === 'string' ? problems : machineConfigMessage(problems));
    this.problems = typeof problems === 'string' ? [] : problems;
  }
}

function machineConfigMessage(problems: readonly ConfigProblem[]): string {
  const lines = problems.map((p) => `  ${p.message}`).join('\n');
  return `invalid machine configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${lines}`;
}
