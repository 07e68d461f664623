// Plugin processes still alive after a command. rancher-machine starts the plugin with
// exec.Command(<path found on PATH>, …), so argv[0] is the path in the job's own bin dir:
// only processes that job started match, never another job's or a colleague's. rancher-machine waits for
// the plugin after Close (cmd.Wait), so a survivor means the plugin did not exit on Close,
// or rancher-machine never closed it (it would then die on its 10 s heartbeat watchdog).
import fs from 'node:fs';

export interface PluginProcess {
  pid: number;
  /** The rancher-machine command it served (argv[2], e.g. "create"); never the flags. */
  command: string;
}

/** Linux only (/proc); elsewhere nothing is found. */
export function pluginProcesses(pluginPath: string): PluginProcess[] {
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const found: PluginProcess[] = [];
  for (const pid of pids) {
    let argv: string[];
    try {
      argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      // A zombie (exited, not reaped) has an empty cmdline: it is not running.
    } catch {
      continue;
    }
    if (argv[0] !== pluginPath) continue;
    // argv: [plugin, rancher-machine, global flags…, command, …]: the first word without a dash.
    // The single executable's Node shows its loader's options and the bootstrap's four words
    // first (launcher/exec.go): rancher-machine's argv starts after them.
    const boot = argv.findIndex((a) => a.endsWith('/harvester-machine.cjs'));
    const own = boot > 0 ? [argv[0], ...argv.slice(boot + 5)] : argv;
    const command = own.slice(2).find((a) => a !== '' && !a.startsWith('-')) ?? '';
    found.push({ pid: Number(pid), command });
  }
  return found;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Waits up to `graceMs` for every plugin process to be gone; returns the survivors (and
 * kills them, so that a failing job leaves nothing behind).
 */
export async function pluginSurvivors(pluginPath: string, graceMs = 1_500): Promise<PluginProcess[]> {
  const deadline = Date.now() + graceMs;
  let left = pluginProcesses(pluginPath);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(100);
    left = pluginProcesses(pluginPath);
  }
  for (const p of left) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return left;
}
