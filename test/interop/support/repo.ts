// Per-file temp dirs for the interop suite. The repository root and the build cache are
// sandbox machinery now (sandbox/rancher-machine/repo.ts); re-exported for bench/plugin-bench.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

export { cacheRoot, repoRoot } from '../../../sandbox/repo.js';

/**
 * A temp directory for the calling test file (or suite), removed after it. Call it at the
 * top of a file or inside describe(): the removal is registered with after().
 */
export function tempRoot(prefix: string): { readonly dir: string } {
  let dir: string | undefined;
  after(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  return {
    get dir(): string {
      dir ??= fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
      return dir;
    },
  };
}
