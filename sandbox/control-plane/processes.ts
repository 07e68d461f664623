// Every process the sandbox starts is tracked here and stopped when the owner stops it,
// when the Node process exits, or when it is interrupted (SIGINT/SIGTERM/SIGHUP), so a
// failing or cancelled test never leaves an etcd or an apiserver behind.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export interface ManagedProcess {
  readonly name: string;
  readonly logPath: string;
  readonly child: ChildProcess;
  /** Resolves with the exit code (or signal) once the process ended. */
  readonly exited: Promise<number | string>;
  stop(graceMs?: number): Promise<void>;
  /** Last lines of its log, for error messages. */
  tail(lines?: number): string;
}

const live = new Set<ManagedProcess>();
const cleanups = new Set<() => void>();
let handlersInstalled = false;
/** Set by killAllNow: the process is going away, nothing is started again (supervise). */
let killedAll = false;
/** Set by deferSignalsToOwner: the owner stops everything itself at a signal. */
let ownerHandlesSignals = false;

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.once('exit', killAllNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      if (ownerHandlesSignals) return;
      killAllNow();
      // Re-raise so the exit status still says which signal ended us.
      process.kill(process.pid, signal);
    });
  }
}

/**
 * For an owner that stops its processes gracefully at SIGINT, SIGTERM and SIGHUP, then exits
 * (`sandbox up`): the signal leaves them running for that stop (killed at once, webhooks would be
 * deregistered and controllers stopped against dead processes). The exit still kills whatever is
 * left, so an owner's stop that fails or hangs leaves nothing behind once it exits.
 */
export function deferSignalsToOwner(): void {
  installHandlers();
  ownerHandlesSignals = true;
}

/** Synchronous last resort: kill everything and run sync cleanups (temp dirs). */
export function killAllNow(): void {
  killedAll = true;
  for (const p of live) {
    try {
      p.child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
  for (const cleanup of cleanups) {
    try {
      cleanup();
    } catch {
      // best effort at exit
    }
  }
  cleanups.clear();
}

/** Registers a synchronous cleanup (removing a temp dir) to run at exit if not run before. */
export function onExitCleanup(cleanup: () => void): () => void {
  installHandlers();
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

/** Starts `command` with its output in `logPath`, in `env` (default: this process's environment). */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  logPath: string,
  env: NodeJS.ProcessEnv = process.env,
): ManagedProcess {
  installHandlers();
  const log = fs.openSync(logPath, 'a', 0o600);
  const child = spawn(command, args, {
    stdio: ['ignore', log, log],
    env: { ...env, GOMAXPROCS: '2' },
  });
  fs.closeSync(log);
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
    child.once('error', (err) => resolve(err.message));
  });
  const managed: ManagedProcess = {
    name,
    logPath,
    child,
    exited,
    async stop(graceMs = 5_000) {
      live.delete(managed);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
    tail(lines = 8) {
      try {
        const text = fs.readFileSync(logPath, 'utf8');
        return text.trimEnd().split('\n').slice(-lines).join('\n');
      } catch {
        return '(no log)';
      }
    },
  };
  live.add(managed);
  void exited.then(() => live.delete(managed));
  return managed;
}

/**
 * A process started again whenever it exits on its own, after `delayMs`, as kubelet restarts a
 * Deployment's container (restartPolicy Always): KubeVirt's virt-controller and Harvester's
 * `harvester` exit when they lose their leader lease (an apiserver restart under load outlasts
 * their renew deadline), and a cluster brings them back. `child` is the running one; `exited`
 * resolves once stop() ended it; `restarts` counts the restarts.
 */
export function supervise(
  start: () => ManagedProcess,
  delayMs = 1_000,
): ManagedProcess & { readonly restarts: number } {
  let current = start();
  let stopped = false;
  let restarts = 0;
  let pending: NodeJS.Timeout | undefined;
  let finished: (code: number | string) => void = () => undefined;
  const exited = new Promise<number | string>((resolve) => (finished = resolve));
  const watch = (p: ManagedProcess): void => {
    void p.exited.then((code) => {
      // Killed with everything else (a signal, the exit): the owner is stopping and may have
      // removed the process's directory already; starting it again would throw in a timer.
      if (stopped || killedAll) return finished(code);
      pending = setTimeout(() => {
        pending = undefined;
        if (killedAll) return finished(code);
        restarts++;
        current = start();
        watch(current);
      }, delayMs);
    });
  };
  watch(current);
  return {
    name: current.name,
    logPath: current.logPath,
    get child() {
      return current.child;
    },
    get restarts() {
      return restarts;
    },
    exited,
    async stop(graceMs?: number) {
      stopped = true;
      clearTimeout(pending); // a restart due after an exit is not started
      await current.stop(graceMs);
      finished(current.child.exitCode ?? current.child.signalCode ?? 'stopped');
    },
    tail: (lines?: number) => current.tail(lines),
  };
}
