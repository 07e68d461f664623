// The Go helper programs under test/ (stdlib or pinned modules from the Go module proxy):
// built once per source and Go version into the shared cache, reused after.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot, repoRoot } from '../../sandbox/repo.js';

/** Why the Go helpers cannot run here, or false. */
export function goSkipReason(): string | false {
  return spawnSync('go', ['version']).status === 0 ? false : 'go is not installed';
}

/** Builds test/<name> unless a binary of exactly this source and Go version is cached; returns its path. */
export function buildGoHelper(name: string): string {
  const sourceDir = join(repoRoot(), 'test', name);
  const goVersion = spawnSync('go', ['version'], { encoding: 'utf8' }).stdout;
  const hash = createHash('sha256').update(goVersion);
  for (const file of readdirSync(sourceDir).sort()) {
    if (file === 'go.mod' || file === 'go.sum' || file.endsWith('.go'))
      hash.update(file).update(readFileSync(join(sourceDir, file)));
  }
  const dir = join(cacheRoot(), name, hash.digest('hex').slice(0, 16));
  const binary = join(dir, name);
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.${process.pid}.partial`;
  const built = spawnSync('go', ['build', '-o', partial, '.'], {
    cwd: sourceDir,
    encoding: 'utf8',
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false -mod=readonly' },
  });
  if (built.status !== 0) throw new Error(`go build of test/${name} failed:\n${built.stderr}`);
  renameSync(partial, binary);
  return binary;
}
