// What every command gets: the process's streams and environment (injected, so the
// program can be driven in-process too), the global options, the machine store, and the
// output helpers. stdout carries results (text or JSON) for scripts; everything meant
// for a person while it happens (progress, logs, errors) goes to stderr.
import { createLogger, type Logger } from '../log/logger.js';
import { redact } from '../log/redact.js';
import { createProgressDisplay, type ProgressDisplay } from './progress.js';
import { MachineStore, storeRoot } from './store/machine-store.js';

export interface CliStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface CliIo {
  stdout: CliStream;
  stderr: CliStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
  /** The process arguments: the driver finds a fresh --harvester-kubeconfig-content in them. */
  argv: readonly string[];
}

export interface GlobalOptions {
  store?: string;
  debug?: boolean;
}

export type OutputFormat = 'text' | 'json';

export class CliContext {
  constructor(
    readonly io: CliIo,
    private readonly globals: () => GlobalOptions,
  ) {}

  get env(): Readonly<Record<string, string | undefined>> {
    return this.io.env;
  }

  get store(): MachineStore {
    return new MachineStore(storeRoot(this.globals().store, this.io.env));
  }

  /** Fancy output (in-place progress, ✓/✗) only on a terminal, and never when NO_COLOR-style dumb terminals ask. */
  get stderrIsTerminal(): boolean {
    return Boolean(this.io.stderr.isTTY) && this.io.env['TERM'] !== 'dumb';
  }

  get stdoutIsTerminal(): boolean {
    return Boolean(this.io.stdout.isTTY) && this.io.env['TERM'] !== 'dumb';
  }

  progress(): ProgressDisplay {
    return createProgressDisplay({ stream: this.io.stderr, tty: this.stderrIsTerminal });
  }

  /** The driver's logger: warnings (or everything with --debug) on stderr, above the progress line. */
  logger(progress?: ProgressDisplay): Logger {
    return createLogger({
      level: this.globals().debug ? 'debug' : 'warn',
      sink: {
        write: (_level, line) => (progress ? progress.log(line) : this.io.stderr.write(line + '\n')),
      },
    });
  }

  /** A result line on stdout (redacted: nothing secret reaches a terminal or a pipe). */
  out(line = ''): void {
    this.io.stdout.write(redact(line) + '\n');
  }

  /** A JSON result on stdout. */
  json(value: unknown): void {
    this.io.stdout.write(redact(JSON.stringify(value, null, 2)) + '\n');
  }

  /** A note for the person on stderr. */
  note(line: string): void {
    this.io.stderr.write(redact(line) + '\n');
  }
}
