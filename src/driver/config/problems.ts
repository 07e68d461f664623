// A configuration problem names its flag and says what is wrong; every problem of a
// config is reported at once. No problem message quotes a secret (kubeconfig, password,
// user data), and none is longer than an operator can read.
import type { ConfigProblem } from '../../common/config-error.js';
import { cliName, type FlagSpec } from './flags.js';

export { ConfigError, type ConfigProblem } from '../../common/config-error.js';

/**
 * Problems quote the values they refuse; a hostile or mistaken value can be megabytes long
 * (a kubeconfig pasted into the wrong field). Long quoted values and long unbroken runs are
 * cut, and a message never exceeds MAX_PROBLEM_CHARS.
 */
const MAX_PROBLEM_CHARS = 1_000;
export function clipValues(phrase: string): string {
  const clipped = phrase
    .replace(/"([^"]{61,})"/g, (_, v: string) => `"${v.slice(0, 60)}…" (${v.length} characters)`)
    .replace(/[^\s"]{81,}/g, (v) => `${v.slice(0, 80)}… (${v.length} characters)`);
  return clipped.length > MAX_PROBLEM_CHARS ? `${clipped.slice(0, MAX_PROBLEM_CHARS)}… (cut)` : clipped;
}

export class Problems {
  readonly list: ConfigProblem[] = [];
  /** Flags refused for their size: what else could be said of them follows from it. */
  private readonly oversized = new Set<FlagSpec>();
  add(spec: FlagSpec, phrase: string): void {
    if (this.oversized.has(spec)) return;
    const flag = cliName(spec);
    this.list.push({ flag, message: `${flag}: ${clipValues(phrase)}` });
  }
  tooLarge(spec: FlagSpec, phrase: string): void {
    this.add(spec, phrase);
    this.oversized.add(spec);
  }
  addAll(spec: FlagSpec, phrases: readonly string[]): void {
    for (const p of phrases) this.add(spec, p);
  }
}
