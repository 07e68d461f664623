// Destructive commands ask first. Without a terminal to ask on, they refuse unless --yes
// was given: a script must say what it wants, and a pipe must not answer for it.
import readline from 'node:readline/promises';
import type { CliContext } from './context.js';
import { UsageError } from './errors.js';

export async function confirm(ctx: CliContext, question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!ctx.io.stdin.isTTY) {
    throw new UsageError(
      `${question.replace(/\?$/, '')}: not confirmed (stdin is not a terminal); pass --yes to confirm`,
    );
  }
  const rl = readline.createInterface({
    input: ctx.io.stdin,
    output: ctx.io.stderr as NodeJS.WritableStream,
  });
  // Ctrl-C at the prompt is a "no" (readline catches it; unanswered, the question would hang).
  const interrupted = new AbortController();
  rl.on('SIGINT', () => interrupted.abort());
  try {
    const answer = await rl.question(`${question} [y/N] `, { signal: interrupted.signal });
    return /^(y|yes)$/i.test(answer.trim());
  } catch (err) {
    if (!interrupted.signal.aborted) throw err;
    ctx.io.stderr.write('\n');
    return false;
  } finally {
    rl.close();
  }
}
