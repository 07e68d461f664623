// A stdlib-only Go program under test/, built once per source and Go version and cached in
// ~/.cache/harvester-machine/<name>/<hash> (as src/plugin/go-interop_test.ts builds its client).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../sandbox/repo.js';

export const goAvailable = spawnSync('go', ['version']).status === 0;

export function buildGoProgram(name: string): string {
  const sourceDir = join(repoRoot(), 'test', name);
  const goVersion = spawnSync('go', ['version'], { encoding: 'utf8' }).stdout;
  const hash = createHash('sha256').update(goVersion);
  for (const file of readdirSync(sourceDir).sort()) {
    if (file === 'go.mod' || file.endsWith('.go'))
      hash.update(file).update(readFileSync(join(sourceDir, file)));
  }
  const cache = process.env.HARVESTER_MACHINE_CACHE ?? join(homedir(), '.cache/harvester-machine');
  const dir = join(cache, name, hash.digest('hex').slice(0, 16));
  const binary = join(dir, name);
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.${process.pid}.partial`;
  const built = spawnSync('go', ['build', '-o', partial, '.'], {
    cwd: sourceDir,
    encoding: 'utf8',
    env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-buildvcs=false' },
  });
  if (built.status !== 0) throw new Error(`go build of test/${name} failed:\n${built.stderr}`);
  renameSync(partial, binary);
  return binary;
}
