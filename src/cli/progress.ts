// What a long command is doing while it waits: on a terminal one line, redrawn in place
// (phase, last state seen, elapsed time); otherwise (a pipe, a CI log) a plain line per
// change, so logs stay readable and diffable. Everything goes to stderr: stdout is the
// command's result, for scripts.
import { formatDuration } from '../common/durations.js';
import type { ProgressEvent } from '../driver/operations/context.js';

export interface ProgressStream {
  write(text: string): unknown;
  columns?: number;
}

export interface ProgressDisplay {
  /** A step of the command: "checking Harvester", "creating VM default/m1". */
  phase(text: string): void;
  /** A wait's progress, from the driver. */
  update(event: ProgressEvent): void;
  /** A log line, printed above the live line. */
  log(line: string): void;
  /** Ends the live line (call before printing the result). */
  stop(): void;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR_LINE = '\r\x1b[2K';

export interface LiveStatus {
  label: string;
  state?: string;
  elapsedMs: number;
}

/** The in-place line: spinner, what we are doing, what we last saw, for how long. */
export function liveLine(status: LiveStatus, frame: number, columns?: number): string {
  const spinner = SPINNER[frame % SPINNER.length] ?? '-';
  const state = status.state ? ` — ${status.state}` : '';
  const line = `${spinner} ${status.label}${state} (${formatDuration(status.elapsedMs)})`;
  // A terminal that does not tell its width (0 or unknown) gets a common one.
  const width = columns && columns > 0 ? Math.max(20, columns - 1) : 100;
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** A plain line: time since the command started, then what happened. */
export function plainLine(text: string, sinceStartMs: number): string {
  return `[${(sinceStartMs / 1000).toFixed(1).padStart(6)} s] ${text}`;
}

export function describeEvent(event: ProgressEvent): string {
  return `waiting for ${event.waitingFor}`;
}

export function createProgressDisplay(options: {
  stream: ProgressStream;
  tty: boolean;
  now?: () => number;
  /** Redraw interval on a terminal. */
  tickMs?: number;
}): ProgressDisplay {
  const { stream, tty } = options;
  const now = options.now ?? Date.now;
  const started = now();
  let current: { label: string; state?: string; since: number } | undefined;
  let lastPlain = '';
  let frame = 0;
  let timer: NodeJS.Timeout | undefined;

  const draw = (): void => {
    if (!current) return;
    const status: LiveStatus = {
      label: current.label,
      elapsedMs: now() - current.since,
      ...(current.state !== undefined ? { state: current.state } : {}),
    };
    stream.write(CLEAR_LINE + liveLine(status, frame++, stream.columns));
  };
  const ensureTicking = (): void => {
    if (!tty || timer) return;
    timer = setInterval(draw, options.tickMs ?? 200);
    // The display never keeps the process alive on its own.
    timer.unref();
  };
  const plain = (text: string): void => {
    if (text === lastPlain) return;
    lastPlain = text;
    stream.write(plainLine(text, now() - started) + '\n');
  };

  return {
    phase(text) {
      current = { label: text, since: now() };
      if (tty) {
        ensureTicking();
        draw();
      } else plain(text);
    },
    update(event) {
      const label = describeEvent(event);
      if (current?.label !== label) current = { label, since: now() - event.elapsedMs };
      current.state = event.state;
      if (tty) {
        ensureTicking();
        draw();
      } else plain(`${label}: ${event.state}`);
    },
    log(line) {
      if (tty && current) stream.write(CLEAR_LINE);
      stream.write(line.endsWith('\n') ? line : line + '\n');
      if (tty && current) draw();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      if (tty && current) stream.write(CLEAR_LINE);
      current = undefined;
    },
  };
}
