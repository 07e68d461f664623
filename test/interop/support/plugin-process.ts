// One plugin process started as rancher-machine's localbinary does: exec of the executable
// with rancher-machine's own argv after it, the parent's environment plus
// MACHINE_PLUGIN_TOKEN=42 and MACHINE_PLUGIN_DRIVER_NAME. Shared by the plugin-level tests
// and the benchmark (start-to-first-line time, RSS).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';

export interface StartedPlugin {
  child: ChildProcessWithoutNullStreams;
  /** The first stdout line (the listen address). */
  address: string;
  /** Every stdout byte before the first newline was the address: nothing came earlier. */
  firstLineMs: number;
  /** Resolves with [code, signal] when the process has exited. */
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  stdout(): string;
  stderr(): string;
}

export const PLUGIN_ENV = { MACHINE_PLUGIN_TOKEN: '42', MACHINE_PLUGIN_DRIVER_NAME: 'harvester' };

/**
 * Starts `command args…` (the plugin executable, or node with the compiled main.js) and
 * resolves once it printed its first line; rejects if it exits first or after timeoutMs.
 */
export function startPlugin(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 10_000,
): Promise<StartedPlugin> {
  const started = process.hrtime.bigint();
  const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (code, signal) => resolve([code, signal])),
  );
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  return new Promise<StartedPlugin>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no first line within ${timeoutMs} ms; stderr: ${err}`));
    }, timeoutMs);
    let firstLineSeen = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const nl = out.indexOf('\n');
      if (firstLineSeen || nl < 0) return;
      firstLineSeen = true;
      clearTimeout(timer);
      resolve({
        child,
        address: out.slice(0, nl),
        firstLineMs: Number(process.hrtime.bigint() - started) / 1e6,
        exited,
        stdout: () => out,
        stderr: () => err,
      });
    });
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    void exited.then(([code, signal]) => {
      if (firstLineSeen) return;
      clearTimeout(timer);
      reject(new Error(`exited (${code ?? signal}) before its first line; stderr: ${err}`));
    });
  });
}

/**
 * A running process's memory in bytes from /proc/<pid>/status (Linux; undefined elsewhere):
 * VmRSS its resident set now, VmHWM the peak resident set so far.
 */
export function memoryBytes(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}
