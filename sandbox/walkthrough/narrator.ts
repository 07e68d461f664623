// How the walkthrough talks to the operator: numbered steps with the clock and each step's
// duration, who did what (Rancher, the driver, the controller, Harvester), small tables,
// and checks: every check is printed, and a failed one ends the walkthrough (later steps
// build on earlier ones), which then exits non-zero. Everything printed is redacted.
import { redact } from '../../src/log/redact.js';

export class CheckFailed extends Error {
  override readonly name = 'CheckFailed';
}

export interface StepTiming {
  title: string;
  ms: number;
  ok: boolean;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** Wraps a long line at word boundaries, every line indented. */
export function wrap(text: string, indent: string, width = 100): string[] {
  const out: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      if (line && indent.length + line.length + 1 + word.length > width) {
        out.push(indent + line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    out.push(indent + line);
  }
  return out;
}

export class Narrator {
  readonly started = Date.now();
  readonly timings: StepTiming[] = [];
  checks = 0;
  private stepNumber = 0;
  private muted = false;

  constructor(
    private readonly totalSteps: number,
    private readonly write: (line: string) => void = (l) => void process.stdout.write(`${l}\n`),
  ) {}

  line(text = ''): void {
    if (!this.muted) this.write(redact(text));
  }

  /** After an interrupt: whatever the story still says as it unwinds is not shown. */
  mute(): void {
    this.muted = true;
  }

  /** Shown even when muted (the interrupt's own messages). */
  announce(text: string): void {
    this.write(redact(text));
  }

  /** `who` in a fixed-width column, then what it did (wrapped). */
  say(who: string, text: string): void {
    const head = `  ${who.padEnd(11)}`;
    const [first = '', ...rest] = wrap(text, ' '.repeat(head.length));
    this.line(head + first.trimStart());
    for (const l of rest) this.line(l);
  }

  /** Verbatim output (a job's log), indented and marked as quoted. */
  quote(text: string, indent = '      │ '): void {
    for (const l of text.trimEnd().split('\n')) for (const w of wrap(l, indent, 118)) this.line(w);
  }

  table(header: string[], rows: string[][], indent = '    '): void {
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
    const fmt = (cells: string[]): string =>
      indent +
      cells
        .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd();
    this.line(fmt(header));
    this.line(fmt(widths.map((w) => '-'.repeat(w))));
    for (const r of rows) this.line(fmt(r));
  }

  /** A check: printed either way; a failed one throws CheckFailed. */
  check(ok: boolean, what: string, detail?: string): void {
    this.checks++;
    this.line(`  ${ok ? '✓' : '✗'} ${what}`);
    if (!ok) {
      if (detail) this.quote(detail, '      ');
      throw new CheckFailed(what);
    }
  }

  async step<T>(title: string, body: () => Promise<T>): Promise<T> {
    this.stepNumber++;
    const clock = seconds(Date.now() - this.started).padStart(7);
    this.line('');
    this.line(`[${clock}] ── Step ${this.stepNumber}/${this.totalSteps}: ${title}`);
    const t0 = Date.now();
    try {
      const result = await body();
      const ms = Date.now() - t0;
      this.timings.push({ title, ms, ok: true });
      this.line(`  ── done in ${seconds(ms)}`);
      return result;
    } catch (err) {
      const ms = Date.now() - t0;
      this.timings.push({ title, ms, ok: false });
      if (!(err instanceof CheckFailed))
        for (const l of wrap(`✗ ${err instanceof Error ? err.message : String(err)}`, '  ', 118))
          this.line(l);
      this.line(`  ── FAILED after ${seconds(ms)}`);
      throw err;
    }
  }

  summary(ok: boolean): void {
    const total = Date.now() - this.started;
    this.line('');
    this.line(`Step timings:`);
    this.table(
      ['step', 'took', ''],
      this.timings.map((t, i) => [`${i + 1}. ${t.title}`, seconds(t.ms).padStart(7), t.ok ? '' : 'FAILED']),
    );
    this.line('');
    this.line(
      ok
        ? `Walkthrough passed: ${this.timings.length} steps, ${this.checks} checks, ${seconds(total)} in all.`
        : `Walkthrough FAILED after ${seconds(total)} (${this.checks} checks made; the failed one is marked ✗ above).`,
    );
  }
}
