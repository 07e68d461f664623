// `sandbox up`: starts the whole sandbox, writes its three kubeconfigs (mode 0600) into the
// state directory, prints one `export …=<file>` line per kubeconfig on stdout (progress goes
// to stderr), and stays up until Ctrl-C, SIGTERM or `sandbox down`.
// `sandbox down`: signals the running `up` (its pid is in the state directory) and waits
// until it stopped everything and removed the state directory.
// State directory: --state-dir, else $HARVESTER_MACHINE_SANDBOX_DIR, else
// ~/.local/state/harvester-machine/sandbox.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/log/logger.js';
import { startSandbox, type Sandbox } from '../sandbox.js';

const USAGE = 'usage: sandbox up|down [--state-dir DIR]';

interface State {
  pid: number;
  status: 'starting' | 'up';
  /** The control planes' temp directories (gone once stopped). */
  dirs?: string[];
  proxyUrl?: string;
}

const FILES = {
  HARVESTER_KUBECONFIG: 'harvester.kubeconfig',
  HARVESTER_VIA_RANCHER_KUBECONFIG: 'harvester-via-rancher.kubeconfig',
  RANCHER_KUBECONFIG: 'rancher.kubeconfig',
} as const;

// Progress on stderr, so that stdout carries only the export lines.
const log = createLogger({ sink: { write: (_level, line) => process.stderr.write(`${line}\n`) } });

function stateDirFrom(args: string[]): string {
  const i = args.indexOf('--state-dir');
  const given =
    i >= 0 ? args[i + 1] : args.find((a) => a.startsWith('--state-dir='))?.slice('--state-dir='.length);
  return path.resolve(
    given ??
      process.env['HARVESTER_MACHINE_SANDBOX_DIR'] ??
      path.join(os.homedir(), '.local', 'state', 'harvester-machine', 'sandbox'),
  );
}

function readState(dir: string): State | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'state.json'), 'utf8')) as State;
  } catch {
    return undefined;
  }
}

function writePrivate(file: string, content: string): void {
  fs.writeFileSync(file, content, { mode: 0o600 });
  fs.chmodSync(file, 0o600); // an existing file keeps its mode otherwise
}

/** Running (an exited process its parent has not reaped yet, a zombie, is not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** Processes whose command line names one of these (unique, temporary) directories. */
function processesUsing(dirs: string[]): number[] {
  if (dirs.length === 0 || !fs.existsSync('/proc')) return [];
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (dirs.some((d) => cmdline.includes(`${d}/`))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const shellQuote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function up(dir: string): Promise<number> {
  const previous = readState(dir);
  if (previous && alive(previous.pid)) {
    log.error(
      `sandbox: a sandbox is already running (pid ${previous.pid}, state in ${dir}); stop it with: npm run sandbox down`,
    );
    return 1;
  }
  fs.rmSync(dir, { recursive: true, force: true }); // a stale state from a killed run
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const writeState = (state: State): void =>
    writePrivate(path.join(dir, 'state.json'), JSON.stringify(state, null, 2));
  writeState({ pid: process.pid, status: 'starting' });

  let sandbox: Sandbox | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (signal: string): Promise<void> =>
    (stopping ??= (async () => {
      log.info(`sandbox: ${signal}: stopping`);
      // Interrupted processes are also killed by the control plane's own handler; never wait forever.
      await Promise.race([sandbox?.stop(), sleep(30_000)]);
      fs.rmSync(dir, { recursive: true, force: true });
      log.info('sandbox: stopped');
      process.exit(0);
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(signal));

  const t0 = Date.now();
  log.info('sandbox: starting (two control planes, stand-in controllers, front proxy)');
  try {
    sandbox = await startSandbox({ logger: log });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    log.error(`sandbox: failed to start: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  if (stopping) return 0; // interrupted while starting: stop() runs and exits
  const contents: Record<keyof typeof FILES, string> = {
    HARVESTER_KUBECONFIG: sandbox.kubeconfigs.harvesterDirect,
    HARVESTER_VIA_RANCHER_KUBECONFIG: sandbox.kubeconfigs.harvesterViaRancher,
    RANCHER_KUBECONFIG: sandbox.kubeconfigs.rancherLocal,
  };
  const lines: string[] = [];
  for (const [variable, file] of Object.entries(FILES) as Array<[keyof typeof FILES, string]>) {
    const full = path.join(dir, file);
    writePrivate(full, contents[variable]);
    lines.push(`export ${variable}=${shellQuote(full)}`);
  }
  writeState({
    pid: process.pid,
    status: 'up',
    dirs: [sandbox.harvester.dir, sandbox.rancher.dir],
    proxyUrl: sandbox.proxy.url,
  });
  process.stdout.write(lines.join('\n') + '\n');
  log.info(
    `sandbox: up in ${((Date.now() - t0) / 1000).toFixed(1)} s: Harvester and Rancher's /k8s/clusters/${sandbox.clusterId} at ${sandbox.proxy.url}; ` +
      'stop with Ctrl-C or: npm run sandbox down',
  );
  await new Promise<never>(() => undefined); // until a signal
  return 0;
}

async function down(dir: string): Promise<number> {
  const state = readState(dir);
  if (!state) {
    log.info(`sandbox: no sandbox is running (no state in ${dir})`);
    return 0;
  }
  if (alive(state.pid)) {
    process.kill(state.pid, 'SIGTERM');
    const deadline = Date.now() + 60_000;
    while (alive(state.pid)) {
      if (Date.now() > deadline) {
        log.error(`sandbox: pid ${state.pid} did not stop within 60 s; killing it`);
        process.kill(state.pid, 'SIGKILL');
        break;
      }
      await sleep(100);
    }
  }
  // A killed `up` could not stop its control planes nor clean up after itself.
  for (const pid of processesUsing(state.dirs ?? [])) process.kill(pid, 'SIGKILL');
  for (const leftover of state.dirs ?? []) fs.rmSync(leftover, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
  log.info('sandbox: stopped');
  return 0;
}

const [command, ...rest] = process.argv.slice(2);
const dir = stateDirFrom(rest);
if (command === 'up') process.exitCode = await up(dir);
else if (command === 'down') process.exitCode = await down(dir);
else {
  process.stderr.write(`${USAGE}\n`);
  process.exitCode = 2;
}
