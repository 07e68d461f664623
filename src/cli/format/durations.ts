// Durations as the CLI's flags take them: the project's one grammar (common/durations.ts),
// refused with a usage error that names the flag.
import { DurationError, parseDuration as parseGoDuration } from '../../common/durations.js';
import { UsageError } from '../errors.js';

/**
 * "0", "90s", "10m", "1h30m", "7d" → milliseconds. A bare number other than 0 is refused,
 * as Go refuses it: "--min-age 10" on a command that deletes volumes must not guess a unit.
 */
export function parseDuration(text: string, flag: string): number {
  try {
    return parseGoDuration(text);
  } catch (err) {
    if (err instanceof DurationError) throw new UsageError(`${flag} ${text}: ${err.message}`);
    throw err;
  }
}
