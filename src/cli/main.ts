#!/usr/bin/env node
// harvester-machine: the operator CLI (see program.ts). Exits only once stdout and stderr
// are flushed, so a script piping the output gets all of it.
import { runCli } from './program.js';

const flushed = (stream: NodeJS.WriteStream): Promise<void> =>
  new Promise((resolve) => stream.write('', () => resolve()));

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
