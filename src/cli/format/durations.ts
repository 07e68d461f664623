// Ages as kubectl shows them ("45s", "12m", "3h", "5d") and durations as flags take them.
import { UsageError } from '../errors.js';

export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "0", "90s", "10m", "2h", "7d" → milliseconds; anything else names the flag. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new UsageError(`${flag} ${text}: expected a duration such as 0, 90s, 10m, 2h or 7d`);
  const value = Number(m[1]);
  if (m[2] === undefined) {
    if (value !== 0) throw new UsageError(`${flag} ${text}: give a unit (s, m, h or d)`);
    return 0;
  }
  return value * (UNIT_MS[m[2]] ?? 1);
}
