// A create job's time, phase by phase, from what the tracing wrapper saw of each plugin
// process (plugin-trace.ts) and what an independent watch saw of the VM and its instance.
// Every phase is the time between two instants on one clock (the wall clock, in ms), so the
// phases add up to the command's time.
import type { TraceLine } from './plugin-trace.js';

/** What the independent watch saw, ms since the epoch. */
/** The phase that is the driver's own lag on create: the address seen by the watch to the driver's IP line. */
export const CREATE_LAG_PHASE = 'driver notices the address';

export interface Observed {
  vmAdded?: number;
  vmiAdded?: number;
  /** First time the instance was seen in each phase. */
  phases: Record<string, number>;
  ipReported?: number;
  /** When the VM was gone (the removal that followed). */
  vmGone?: number;
}

export interface Phase {
  name: string;
  ms: number;
  /** Whose time it is: the stand-ins', or ours (rancher-machine, the plugin, the driver). */
  whose: 'ours' | 'stand-ins';
}

export interface CreateBreakdown {
  totalMs: number;
  phases: Phase[];
  /** The stand-ins' own time: the VM created until its instance reported the address. */
  standInsMs: number;
  /** Everything else. */
  oursMs: number;
  pluginProcesses: number;
}

const rpc = (lines: TraceLine[], method: string): TraceLine | undefined =>
  lines.find((l) => l.kind === 'err' && l.text.startsWith(`rpc: call RPCServerDriver.${method} `));
const out = (lines: TraceLine[], prefix: string): TraceLine | undefined =>
  lines.find((l) => l.kind === 'out' && l.text.startsWith(prefix));

/**
 * The phases of one `rancher-machine create` that started at `startedMs` and ended at
 * `endedMs`. Throws when the trace lacks an instant it needs (a broken run is no figure).
 */
export function createBreakdown(
  trace: TraceLine[],
  observed: Observed,
  startedMs: number,
  endedMs: number,
): CreateBreakdown {
  const byPid = new Map<string, TraceLine[]>();
  // A plugin of the command before may still write its exit line after that command ended.
  for (const l of trace) if (l.atMs >= startedMs) byPid.set(l.pid, [...(byPid.get(l.pid) ?? []), l]);
  const processes = [...byPid.values()]
    .filter((p) => p.some((l) => l.kind === 'exec'))
    .sort((a, b) => (a[0]?.atMs ?? 0) - (b[0]?.atMs ?? 0));
  const host = processes.find((p) => rpc(p, 'Create'));
  const flags = processes[0];
  if (!host || !flags || flags === host) throw new Error('the trace shows no flags plugin and host plugin');
  const at = (what: string, line: TraceLine | undefined): number => {
    if (!line) throw new Error(`the trace lacks ${what}`);
    return line.atMs;
  };
  const need = (what: string, v: number | undefined): number => {
    if (v === undefined) throw new Error(`the watch never saw ${what}`);
    return v;
  };
  const started = (p: TraceLine[]): number =>
    at(
      'a plugin start',
      p.find((l) => l.kind === 'exec'),
    );
  const listening = (p: TraceLine[]): number =>
    at(
      'a listen address',
      p.find((l) => l.kind === 'out'),
    );
  const createCall = at('Create', rpc(host, 'Create'));
  const instants: Array<[string, number, Phase['whose']]> = [
    ['rancher-machine start to the first plugin', started(flags), 'ours'],
    ['plugin 1 start-up (exec to listen address)', listening(flags), 'ours'],
    ['plugin 1 calls (GetVersion, SetConfigRaw, GetCreateFlags), rancher-machine', started(host), 'ours'],
    ['plugin 2 start-up', listening(host), 'ours'],
    [
      'handshake, SetConfigRaw, GetCreateFlags',
      at('SetConfigFromFlags', rpc(host, 'SetConfigFromFlags')),
      'ours',
    ],
    ['SetConfigFromFlags', at('PreCreateCheck', rpc(host, 'PreCreateCheck')), 'ours'],
    [
      'PreCreateCheck (its requests)',
      at('GetConfigRaw after PreCreateCheck', nextRpc(host, 'PreCreateCheck')),
      'ours',
    ],
    ['rancher-machine saves the host', createCall, 'ours'],
    ['Create: start to key generation', at('the key line', out(host, 'Creating New SSH Key')), 'ours'],
    ['SSH key generation', at('the public key line', out(host, 'Using public Key')), 'ours'],
    ['image read, VM built and sent', need('the VM', observed.vmAdded), 'ours'],
    ['stand-ins: VM to instance', need('the instance', observed.vmiAdded), 'stand-ins'],
    ['stand-ins: instance to Running', need('Running', observed.phases.Running), 'stand-ins'],
    ['stand-ins: Running to the address', need('the address', observed.ipReported), 'stand-ins'],
    [CREATE_LAG_PHASE, at('the IP line', out(host, 'Get machine ip')), 'ours'],
    // rancher-machine does not wait for its plugins to exit after Close.
    ['after Create (GetState, provisioning, saves, Close, exit)', endedMs, 'ours'],
  ];
  const phases: Phase[] = [];
  let last = startedMs;
  for (const [name, instant, whose] of instants) {
    phases.push({ name, ms: instant - last, whose });
    last = instant;
  }
  const standInsMs = phases.filter((p) => p.whose === 'stand-ins').reduce((a, p) => a + p.ms, 0);
  return {
    totalMs: endedMs - startedMs,
    phases,
    standInsMs,
    oursMs: endedMs - startedMs - standInsMs,
    pluginProcesses: processes.length,
  };
}

/** The call that followed `method` on the same plugin. */
function nextRpc(lines: TraceLine[], method: string): TraceLine | undefined {
  const calls = lines.filter((l) => l.kind === 'err' && l.text.startsWith('rpc: call RPCServerDriver.'));
  const i = calls.findIndex((l) => l.text.startsWith(`rpc: call RPCServerDriver.${method} `));
  return i >= 0 ? calls[i + 1] : undefined;
}
