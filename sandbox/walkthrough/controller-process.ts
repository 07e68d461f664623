// Our cleanup controller as its own process, `node dist/src/controller/main.js`, against
// Rancher's local cluster, with the flags the Helm chart passes (leader election on). It is
// a managed process of the sandbox (control-plane/processes.ts): stopped with SIGTERM,
// and killed at exit or on an interrupt whatever happens. Its JSON log goes to a file the
// walkthrough reads to show what the controller did.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProcess, type ManagedProcess } from '../control-plane/processes.js';

export interface ControllerLogLine {
  ts: string;
  level: string;
  msg: string;
  /** The Event reason, on lines that record an Event. */
  event?: string;
  /** "Machine fleet-default/<name>". */
  object?: string;
  [field: string]: unknown;
}

export interface ControllerProcess {
  pid: number | undefined;
  /** Resolves with the exit code (or signal) whenever the process ends, on its own or not. */
  exited: Promise<number | string>;
  lines(): ControllerLogLine[];
  /** Waits until a log line matches (or the process exits, or the timeout). */
  waitForLine(
    match: (l: ControllerLogLine) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<ControllerLogLine>;
  stop(): Promise<number | string>;
  /** SIGKILL, as a node failure would: no Lease is given up. */
  kill(): Promise<number | string>;
}

/** dist/src/controller/main.js, from this compiled file (dist/sandbox/walkthrough/). */
export const CONTROLLER_MAIN = fileURLToPath(new URL('../../src/controller/main.js', import.meta.url));

export function startControllerProcess(opts: {
  dir: string;
  rancherKubeconfig: string;
  namespace: string;
  systemNamespace: string;
  /** More flags (--gate-deadline …). */
  extraArgs?: string[];
  /** Names the kubeconfig and log files, for several replicas in one directory. */
  name?: string;
  /** Node's own flags, before the script (the chart's heap: --max-old-space-size=128 …). */
  nodeOptions?: string[];
}): ControllerProcess {
  const name = opts.name ?? 'controller';
  const kubeconfig = path.join(opts.dir, `${name}.kubeconfig`);
  fs.writeFileSync(kubeconfig, opts.rancherKubeconfig, { mode: 0o600 });
  const logPath = path.join(opts.dir, `${name}.log`);
  const managed: ManagedProcess = startProcess(
    'cleanup-controller',
    process.execPath,
    [
      ...(opts.nodeOptions ?? []),
      CONTROLLER_MAIN,
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      opts.namespace,
      '--leader-election-namespace',
      opts.systemNamespace,
      '--metrics-bind-address',
      '127.0.0.1:0',
      ...(opts.extraArgs ?? []),
    ],
    logPath,
  );
  let exit: number | string | undefined;
  void managed.exited.then((e) => (exit = e));

  const lines = (): ControllerLogLine[] => {
    let text: string;
    try {
      text = fs.readFileSync(logPath, 'utf8');
    } catch {
      return [];
    }
    return text.split('\n').flatMap((l) => {
      if (!l.startsWith('{')) return [];
      try {
        return [JSON.parse(l) as ControllerLogLine];
      } catch {
        return []; // a line still being written
      }
    });
  };

  return {
    pid: managed.child.pid,
    exited: managed.exited,
    lines,
    async waitForLine(match, what, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines().find(match);
        if (found) return found;
        if (exit !== undefined)
          throw new Error(
            `the cleanup controller exited (${exit}) before ${what}; its log:\n${managed.tail(12)}`,
          );
        if (Date.now() > deadline)
          throw new Error(
            `the cleanup controller did not log ${what} within ${timeoutMs / 1000} s; its log:\n${managed.tail(12)}`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      await managed.stop(10_000);
      return managed.exited;
    },
    async kill() {
      managed.child.kill('SIGKILL');
      return managed.exited;
    },
  };
}
