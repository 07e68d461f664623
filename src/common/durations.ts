// Durations as people write them (flags, environment variables) and as they read them
// (messages, tables). One grammar and one formatter for the whole project: a flag of the
// CLI and one of the controller take the same "1h30m", and a timeout reads the same in a
// driver error and in a CLI table.

/** A text that is not a duration; the message is a phrase to follow "<flag> <text>: ". */
export class DurationError extends Error {
  override readonly name = 'DurationError';
}

export interface ParseDurationOptions {
  /**
   * A number without a unit. Go refuses it (only "0" is a duration without one), and so
   * does 'refuse', the default: "--min-age 10" could mean seconds or days. 'seconds' reads
   * it as seconds, for settings that took plain seconds before they took durations.
   */
  bareNumbers?: 'refuse' | 'seconds';
}

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  // Not Go's: the controller's and the CLI's durations are often days (7d of credential expiry).
  d: 86_400_000,
};
const TERM = /(\d*)(?:\.(\d*))?([a-zµμ]+)/y;
const EXAMPLES = 'such as 90s, 10m, 1h30m or 7d';

/**
 * Go's time.ParseDuration grammar, in milliseconds: a sequence of decimal numbers, each
 * with an optional fraction and a unit (ns, us, µs, ms, s, m, h, and d for 24h), as in
 * "300ms", "1.5h" or "2h45m"; "0" alone needs no unit. Unlike Go, no sign: every duration
 * here is a length of time. Throws DurationError.
 */
export function parseDuration(text: string, options: ParseDurationOptions = {}): number {
  const value = text.trim();
  if (/^\d+$/.test(value)) {
    if (options.bareNumbers === 'seconds') return Number(value) * 1_000;
    if (Number(value) === 0) return 0;
    throw new DurationError(`give a unit (for example ${value}s or ${value}m)`);
  }
  if (value === '') throw new DurationError(`expected a duration ${EXAMPLES}`);
  let total = 0;
  TERM.lastIndex = 0;
  while (TERM.lastIndex < value.length) {
    const [term, whole = '', fraction = '', unit = ''] = TERM.exec(value) ?? [];
    const size = UNIT_MS[unit];
    if (term === undefined || (whole === '' && fraction === '') || size === undefined) {
      throw new DurationError(`expected a duration ${EXAMPLES}`);
    }
    total += Number(whole || '0') * size + (fraction ? (Number(fraction) / 10 ** fraction.length) * size : 0);
  }
  // Whole nanoseconds, as Go counts them: "1.1h" is 3960000 ms, not 3960000.0000000005.
  return Math.round(total * 1e6) / 1e6;
}

const plural = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? '' : 's'}`;

/**
 * A duration for people. 'text' (for sentences): "850 ms", "12 s", "2 min 05 s",
 * "5 hours", "3 days". 'column' (for tables, as kubectl prints ages): "12s", "2m", "5h",
 * "3d". Both change unit at the same points (2 minutes, 2 hours, 2 days) and round down,
 * so a duration never reads longer than it was; a negative one reads as 0.
 */
export function formatDuration(ms: number, style: 'text' | 'column' = 'text'): string {
  const text = style === 'text';
  const clamped = Math.max(0, ms);
  if (text && clamped < 1_000) return `${Math.round(clamped)} ms`;
  const seconds = Math.floor(clamped / 1_000);
  if (seconds < 120) return text ? `${seconds} s` : `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) {
    if (!text) return `${minutes}m`;
    const rest = seconds % 60;
    return rest === 0 ? `${minutes} min` : `${minutes} min ${String(rest).padStart(2, '0')} s`;
  }
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return text ? plural(hours, 'hour') : `${hours}h`;
  const days = Math.floor(hours / 24);
  return text ? plural(days, 'day') : `${days}d`;
}
