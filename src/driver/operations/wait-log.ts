// The job log of a wait, as Rancher shows it: a line when the watched object's phase
// changes, and while nothing changes a "Still waiting" line every interval that repeats
// the last state seen (with the condition that holds it) and the time waited so far.
// Rate-limited on purpose: a long wait prints one progress line per interval, however busy.
import { formatDuration } from '../../common/durations.js';
import { phaseOf } from '../../harvester/vm-progress.js';
import type { Logger } from '../../log/logger.js';

/** How often a wait without news says it is still waiting. */
export const DEFAULT_PROGRESS_INTERVAL_MS = 15_000;

export interface WaitLogOptions {
  log: Logger;
  /** "VM default/m1 to be Running". */
  waitingFor: string;
  intervalMs: number;
  /** Extra detail for a progress line, read only when it is printed (one request per line at most). */
  probe?: (lastState: string) => Promise<string | undefined>;
  now?: () => number;
}

export class WaitLog {
  private readonly now: () => number;
  private readonly started: number;
  private lastState: string | undefined;
  private lastPhase: string | undefined;
  private lastLineAt: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: WaitLogOptions) {
    this.now = options.now ?? Date.now;
    this.started = this.now();
    this.lastLineAt = this.started;
    this.schedule();
  }

  /** A state the wait observed (it reports changes only). */
  observe(state: string): void {
    this.lastState = state;
    const phase = phaseOf(state);
    if (phase === this.lastPhase) return;
    this.lastPhase = phase;
    this.line(`${state} (after ${formatDuration(this.now() - this.started)})`);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private line(text: string): void {
    this.lastLineAt = this.now();
    this.options.log.info(text);
    this.schedule();
  }

  private schedule(): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    const due = Math.max(0, this.lastLineAt + this.options.intervalMs - this.now());
    this.timer = setTimeout(() => void this.progress(), due);
    // The wait itself keeps the process busy; this timer never has to.
    this.timer.unref();
  }

  private async progress(): Promise<void> {
    const state = this.lastState ?? 'nothing seen yet';
    let extra: string | undefined;
    if (this.options.probe) {
      try {
        extra = await this.options.probe(state);
      } catch (err) {
        this.options.log.debug(`reading more detail for the progress line failed: ${String(err)}`);
      }
    }
    if (this.stopped) return;
    const waited = formatDuration(this.now() - this.started);
    this.line(
      `Still waiting for ${this.options.waitingFor} after ${waited}: ${state}${extra ? `; ${extra}` : ''}`,
    );
  }
}
