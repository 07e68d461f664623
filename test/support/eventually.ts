// Test scaffolding: polling for a condition the test itself observes (not the code under test).

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Reads every 100 ms until `enough` holds for what `read` returned, and returns that; fails
 * after `timeoutMs` saying what it waited for (`what` may describe the last value read).
 */
export async function eventuallyValue<T>(
  what: string | ((last: T) => string),
  read: () => Promise<T>,
  enough: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (enough(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(`not within ${timeoutMs} ms: ${typeof what === 'string' ? what : what(value)}`);
    }
    await sleep(100);
  }
}

/** Polls `check` every 100 ms until it holds, or fails after `timeoutMs` saying what it waited for. */
export async function eventually(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  await eventuallyValue(what, check, (ok) => ok, timeoutMs);
}
