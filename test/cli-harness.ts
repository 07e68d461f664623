// Runs the BUILT harvester-machine (dist/src/cli/main.js) as a subprocess, the way an
// operator or a script does: its own environment (nothing inherited but PATH), a store
// per test file, stdin a pipe (not a terminal), and its exit code, stdout and stderr.
// Asynchronous on purpose: the sandbox's stand-in controllers run in this process and
// must keep working while the CLI waits for them.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import { recordOutput } from '../sandbox/secret-ledger.js';

export const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/cli/main.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json<T = unknown>(): T;
}

export interface CliRun {
  env?: Record<string, string | undefined>;
  input?: string;
  timeoutMs?: number;
}

/** A temporary directory (0700) removed after the test file. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes a kubeconfig file (0600) and returns its path. */
export function kubeconfigFile(dir: string, name: string, content: string): string {
  const file = path.join(dir, `${name}.kubeconfig`);
  fs.writeFileSync(file, content, { mode: 0o600 });
  return file;
}

export class CliRunner {
  readonly home: string;
  constructor(readonly store: string) {
    this.home = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-home-'));
    after(() => fs.rmSync(this.home, { recursive: true, force: true }));
  }

  run(args: readonly string[], opts: CliRun = {}): Promise<CliResult> {
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: this.home,
      HARVESTER_MACHINE_STORE: this.store,
    };
    for (const [k, v] of Object.entries(opts.env ?? {})) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        const stdout = Buffer.concat(out).toString('utf8');
        const stderr = Buffer.concat(err).toString('utf8');
        // For the suite's secrets scan: nothing the CLI prints may hold a credential.
        recordOutput(`harvester-machine ${args[0] ?? ''}`, stdout + stderr);
        resolve({
          code: code ?? (signal ? 128 : 1),
          stdout,
          stderr,
          json<T>(): T {
            try {
              return JSON.parse(stdout) as T;
            } catch {
              throw new Error(`stdout is not JSON (exit ${code ?? signal}):\n${stdout}\nstderr:\n${stderr}`);
            }
          },
        });
      });
      child.stdin.end(opts.input ?? '');
    });
  }

  /** Runs and asserts the exit code, showing stderr when it differs. */
  async expect(code: number, args: readonly string[], opts: CliRun = {}): Promise<CliResult> {
    const result = await this.run(args, opts);
    if (result.code !== code) {
      throw new Error(
        `harvester-machine ${args.join(' ').slice(0, 200)}: exit ${result.code}, expected ${code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`,
      );
    }
    return result;
  }
}

/** The flags every test machine is created with (the sandbox's image and network, short waits). */
export const MACHINE_FLAGS: readonly string[] = [
  '--harvester-image-name=default/image-ubuntu',
  '--harvester-network-name=default/vlan1',
  '--harvester-disk-size=40',
  '--harvester-create-timeout=60',
  '--harvester-ip-timeout=60',
  '--harvester-remove-timeout=60',
];

/** File modes (permission bits) of a path. */
export function mode(file: string): number {
  return fs.statSync(file).mode & 0o777;
}
