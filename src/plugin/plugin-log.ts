// Where a plugin's log lines go, given how rancher-machine shows them: each stdout
// line becomes an info line "(machine) text", always shown; each stderr line becomes
// "(machine) DBG | text", shown only in debug mode. So debug goes to stderr and
// everything a user should see (info, warnings, errors) to stdout. The first stdout
// line must be the listen address, so stdout lines wait until it has been written.
import type { LogLevel, LogSink } from '../log/logger.js';

export interface LineWriter {
  write(text: string): unknown;
}

/**
 * rancher-machine reads our output with bufio.Scanner, which stops at a line over
 * 64 KiB (and then never drains the pipe, so we would block). 16000 UTF-16 units are
 * at most 48000 bytes of UTF-8.
 */
export const MAX_LINE_CHARS = 16_000;

export class PluginLogSink implements LogSink {
  private held: string[] | undefined = [];

  constructor(
    private readonly stdout: LineWriter,
    private readonly stderr: LineWriter,
  ) {}

  write(level: LogLevel, line: string): void {
    for (const part of line.split('\n')) {
      const text = clip(part.replace(/\r$/, '')) + '\n';
      if (level === 'debug') this.stderr.write(text);
      else if (this.held !== undefined) this.held.push(text);
      else this.stdout.write(text);
    }
  }

  /** Writes the first stdout line, then the lines held until now. */
  startStdout(firstLine: string): void {
    if (this.held === undefined) throw new Error('stdout has already been started');
    const held = this.held;
    this.held = undefined;
    this.stdout.write(firstLine + '\n');
    for (const text of held) this.stdout.write(text);
  }
}

function clip(line: string): string {
  if (line.length <= MAX_LINE_CHARS) return line;
  return `${line.slice(0, MAX_LINE_CHARS)} … [${line.length - MAX_LINE_CHARS} more characters cut]`;
}
