// The real rancher-machine CLI, built once from the Go module proxy by
// scripts/build-rancher-machine.sh (pinned tag, cached under ~/.cache/harvester-machine),
// and a runner that starts it the way Rancher's machine-provision job does: a clean
// environment (nothing of ours leaks in), our plugin first on PATH, HOME as the store's
// home (~/.docker/machine, as in the job's pod), TMPDIR a directory the caller removes
// (create writes the modified user-data there), XDG_CACHE_HOME one directory for every
// job where the executable keeps its unpacked runtime (unpackCacheEnv). Never `-D`: in
// debug mode rancher-machine echoes its argv, which holds the kubeconfig.
import { execFile, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { redact } from '../../src/log/redact.js';
import { pluginSurvivors, type PluginProcess } from './plugin-processes.js';
import { PLUGIN_NAME, unpackCacheEnv } from './plugin-executable.js';
import { repoRoot } from '../repo.js';

const run = promisify(execFile);

/**
 * Why rancher-machine cannot run here, or false. Only a missing Go toolchain is such a
 * reason: with Go present, a failing build is an error (it must run on this machine).
 */
export function rancherMachineSkipReason(): string | false {
  if (process.env.RANCHER_MACHINE_BINARY) return false;
  const go = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' });
  if (go.error || go.status !== 0)
    return 'rancher-machine cannot be built here: no working `go` on PATH (install Go >= 1.25, or set RANCHER_MACHINE_BINARY to a rancher-machine binary)';
  return false;
}

let binary: Promise<string> | undefined;

/** The rancher-machine binary (RANCHER_MACHINE_BINARY, else built and cached by the script). */
export function rancherMachineBinary(): Promise<string> {
  binary ??= (async () => {
    const given = process.env.RANCHER_MACHINE_BINARY;
    if (given) return path.resolve(given);
    try {
      const { stdout } = await run('bash', ['scripts/build-rancher-machine.sh'], {
        cwd: repoRoot(),
        maxBuffer: 4 * 1024 * 1024,
        timeout: 15 * 60_000,
      });
      const built = stdout.trim().split('\n').pop() ?? '';
      if (!built || !fs.existsSync(built))
        throw new Error(`the build script printed no binary path (${stdout.trim()})`);
      return built;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`building rancher-machine failed: ${e.stderr?.trim() || e.message}`, { cause: err });
    }
  })();
  return binary;
}

export interface MachineRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout then stderr: rancher-machine logs info on stdout and errors on stderr. */
  output: string;
  durationMs: number;
  /** Plugin processes that outlived the command (killed by the runner). */
  survivors: PluginProcess[];
}

export interface MachineCliOptions {
  binary: string;
  /** Holds docker-machine-driver-harvester (and maybe an ssh stand-in); first on PATH. */
  binDir: string;
  /** HOME of the command: the store is <home>/.docker/machine. */
  home: string;
  tmpDir: string;
  /** Environment for every command (the job's env Secret). */
  env?: Record<string, string>;
  /**
   * Sees every command's output once it ended (the tests' secrets scan keeps it); `source`
   * names the command ("rancher-machine create"), never its flags.
   */
  onOutput?: (source: string, text: string) => void;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  /** Killed (SIGKILL) after this long; default 2 minutes. */
  timeoutMs?: number;
  /** Aborting kills the command (SIGKILL); its plugin processes are then killed by the survivor check. */
  signal?: AbortSignal;
}

/** Arguments as they may be shown: every flag value that can hold a credential is replaced. */
export function redactArgs(args: readonly string[]): string {
  return redact(
    args
      .map((a) => a.replace(/^(--[a-z-]*(?:kubeconfig|password|token)[a-z-]*=)[\s\S]*$/i, '$1<redacted>'))
      .map((a) => (/\s/.test(a) ? JSON.stringify(a) : a))
      .join(' '),
  );
}

export class MachineCli {
  constructor(readonly options: MachineCliOptions) {}

  get storePath(): string {
    return path.join(this.options.home, '.docker', 'machine');
  }

  get pluginPath(): string {
    return path.join(this.options.binDir, PLUGIN_NAME);
  }

  /** A fresh, empty home, as every job's pod starts with. */
  freshHome(): void {
    fs.rmSync(this.options.home, { recursive: true, force: true });
    fs.mkdirSync(this.options.home, { recursive: true });
    fs.mkdirSync(this.options.tmpDir, { recursive: true });
  }

  environment(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      PATH: `${this.options.binDir}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: this.options.home,
      TMPDIR: this.options.tmpDir,
      LANG: 'C.UTF-8',
      ...unpackCacheEnv(),
      ...this.options.env,
    };
    for (const [k, v] of Object.entries(extra)) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    return env;
  }

  /** Runs one command to its end (killed after timeoutMs or on abort), then checks for plugin survivors. */
  async run(args: readonly string[], opts: RunOptions = {}): Promise<MachineRun> {
    fs.mkdirSync(this.options.home, { recursive: true });
    fs.mkdirSync(this.options.tmpDir, { recursive: true });
    const started = Date.now();
    const child = spawn(this.options.binary, args, {
      env: this.environment(opts.env),
      cwd: this.options.home,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const kill = (): void => void child.kill('SIGKILL');
    const timer = setTimeout(kill, opts.timeoutMs ?? 120_000);
    if (opts.signal?.aborted) kill();
    opts.signal?.addEventListener('abort', kill, { once: true });
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (c, s) => resolve([c, s]));
    }).finally(() => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', kill);
    });
    const durationMs = Date.now() - started;
    const command = args.find((a) => !a.startsWith('-')) ?? '';
    this.options.onOutput?.(`rancher-machine ${command}`, stdout + stderr);
    const survivors = await pluginSurvivors(this.pluginPath);
    return { code, signal, stdout, stderr, output: stdout + stderr, durationMs, survivors };
  }

  /** Runs and requires exit code `expectCode` (default 0) and no plugin survivor. */
  async expect(
    args: readonly string[],
    opts: RunOptions & { expectCode?: number } = {},
  ): Promise<MachineRun> {
    const result = await this.run(args, opts);
    const problem = runProblem(result, opts.expectCode ?? 0);
    if (problem) throw new Error(describeRun(args, result, problem));
    return result;
  }
}

/** What is wrong with a finished run (exit code, signal, plugin survivors), or undefined. */
export function runProblem(result: MachineRun, expectCode = 0): string | undefined {
  const problems: string[] = [];
  if (result.code !== expectCode)
    problems.push(
      result.signal
        ? `was killed (${result.signal}) after ${result.durationMs} ms`
        : `exited ${result.code}, expected ${expectCode}`,
    );
  if (result.survivors.length > 0)
    problems.push(
      `left plugin process(es) running: ${result.survivors.map((p) => `pid ${p.pid} (${p.command})`).join(', ')}`,
    );
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/** A failed run, for an error message: command (redacted), what went wrong, its output. */
export function describeRun(args: readonly string[], result: MachineRun, problem: string): string {
  return redact(
    `rancher-machine ${redactArgs(args)}: ${problem}\n--- stdout ---\n${result.stdout}--- stderr ---\n${result.stderr}`,
  );
}
