// A create job's phases, as seen from outside the plugin: a bash wrapper installed under the
// plugin's name runs the real executable and stamps (bash's $EPOCHREALTIME, no fork per line)
// its start, every line it prints (stdout: the listen address, then the driver's info lines;
// stderr: its debug lines, among them "rpc: call <method>") and its exit into a trace file.
// Nothing of the product changes; the wrapper costs one bash start per plugin process (a few
// ms, reported as "wrapper" by the benchmark from an empty wrapper run).
// The trace holds what the plugin logs, which is redacted at the source; it lives in the
// benchmark's temp dir (0600) and only phase names and times leave it.
import fs from 'node:fs';
import path from 'node:path';
import { PLUGIN_NAME } from '../../sandbox/rancher-machine/plugin-executable.js';

export const TRACE_ENV = 'HM_BENCH_PLUGIN_TRACE';

/** Installs the wrapper as <binDir>/docker-machine-driver-harvester, running `real`. */
export function installTracingPlugin(real: string, binDir: string): string {
  fs.mkdirSync(binDir, { recursive: true });
  const wrapper = path.join(binDir, PLUGIN_NAME);
  fs.rmSync(wrapper, { force: true });
  const script = `#!/bin/bash
t="\${${TRACE_ENV}:-/dev/null}"
printf '%s %s exec\\n' "$EPOCHREALTIME" "$$" >>"$t"
${JSON.stringify(real)} "$@" \\
  > >(while IFS= read -r l; do printf '%s\\n' "$l"; printf '%s %s out %s\\n' "$EPOCHREALTIME" "$$" "$l" >>"$t"; done) \\
  2> >(while IFS= read -r l; do printf '%s\\n' "$l" >&2; printf '%s %s err %s\\n' "$EPOCHREALTIME" "$$" "$l" >>"$t"; done)
code=$?
printf '%s %s exit %s\\n' "$EPOCHREALTIME" "$$" "$code" >>"$t"
exit $code
`;
  fs.writeFileSync(wrapper, script, { mode: 0o700 });
  return wrapper;
}

export interface TraceLine {
  /** Milliseconds since the epoch. */
  atMs: number;
  pid: string;
  kind: 'exec' | 'out' | 'err' | 'exit';
  text: string;
}

export function readTrace(file: string): TraceLine[] {
  if (!fs.existsSync(file)) return [];
  const lines: TraceLine[] = [];
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^(\d+)[.,](\d+) (\d+) (exec|out|err|exit) ?(.*)$/.exec(raw);
    if (!m) continue;
    const [, sec = '0', frac = '0', pid = '', kind = 'out', text = ''] = m;
    lines.push({
      atMs: Number(sec) * 1000 + Number(`0.${frac}`) * 1000,
      pid,
      kind: kind as TraceLine['kind'],
      text,
    });
  }
  return lines.sort((a, b) => a.atMs - b.atMs);
}
