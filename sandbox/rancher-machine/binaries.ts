// The two binaries Rancher's jobs need here: the real rancher-machine (built once from the
// Go module proxy) and our single executable (built once per source version). Both are
// cached under ~/.cache/harvester-machine; a build that takes a while is announced, since
// a cold rancher-machine build takes minutes and would otherwise look like a hang.
import { pluginExecutable } from './plugin-executable.js';
import { rancherMachineBinary, rancherMachineSkipReason } from './rancher-machine.js';

export interface JobBinaries {
  rancherMachine: string;
  plugin: string;
}

const SLOW_MS = 2_000;

async function announced(
  get: () => Promise<string>,
  starting: string,
  note: (line: string) => void,
): Promise<string> {
  const t0 = Date.now();
  const timer = setTimeout(() => note(starting), SLOW_MS);
  try {
    const path = await get();
    if (Date.now() - t0 >= SLOW_MS) note(`built in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${path}`);
    return path;
  } finally {
    clearTimeout(timer);
  }
}

/** Both binaries, built when missing; `note` hears about builds that take longer than 2 s. */
export async function jobBinaries(note: (line: string) => void): Promise<JobBinaries> {
  const missing = rancherMachineSkipReason();
  if (missing) throw new Error(missing);
  const [rancherMachine, plugin] = await Promise.all([
    announced(
      rancherMachineBinary,
      'building rancher-machine from the Go module proxy (once, then cached; a cold build takes about 2.5 min on 2 cores)…',
      note,
    ),
    announced(
      pluginExecutable,
      'building the executable for these sources (static launcher, Node LTS, esbuild bundle; cached per source version; the first build also compresses Node, 2–5 min)…',
      note,
    ),
  ]);
  return { rancherMachine, plugin };
}
