// Where things are for rancher-machine and the plugin executable: the repository root (found
// from this compiled file, so it works from any cwd) and the shared build cache.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository: the nearest parent holding scripts/build-executable.sh and package.json. */
export function repoRoot(): string {
  const candidates = [process.env.HARVESTER_MACHINE_ROOT, process.cwd()];
  for (
    let dir = path.dirname(fileURLToPath(import.meta.url));
    dir !== path.dirname(dir);
    dir = path.dirname(dir)
  )
    candidates.push(dir);
  for (const dir of candidates) {
    if (
      dir &&
      fs.existsSync(path.join(dir, 'scripts/build-executable.sh')) &&
      fs.existsSync(path.join(dir, 'package.json'))
    )
      return path.resolve(dir);
  }
  throw new Error('cannot find the repository (no scripts/build-executable.sh above this file or in cwd)');
}

/** The cache the build scripts use too (scripts/build-executable.sh, build-rancher-machine.sh). */
export function cacheRoot(): string {
  return (
    process.env.HARVESTER_MACHINE_CACHE ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'harvester-machine')
  );
}
