// The CLI as a process: runs the command line on the real stdio, exits only once stdout
// and stderr are flushed (so a script piping the output gets all of it). Started by
// cli/main.ts under Node, or by the single executable's dispatcher.
import { runCli } from './program.js';

const flushed = (stream: NodeJS.WriteStream): Promise<void> =>
  new Promise((resolve) => stream.write('', () => resolve()));

export async function runCliProcess(): Promise<never> {
  process.on('SIGINT', () => {
    // Leave the terminal clean if an in-place progress line is showing.
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K');
    process.exit(130);
  });
  const code = await runCli({
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    argv: process.argv,
  });
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
