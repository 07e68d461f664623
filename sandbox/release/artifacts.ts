// What `npm run release` makes, for the tests: scripts/release.sh run on the cached
// executable into the shared cache, keyed by a hash of everything the artifacts are made
// from (the sources, the build scripts, the chart), so a warm suite builds nothing and a
// changed chart or script is never tested through stale artifacts.
// HARVESTER_RELEASE_DIR=<dir> uses a given release/ instead (e.g. one `npm run release` made).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot, repoRoot } from '../repo.js';
import { pluginExecutable, pluginSourceHash, withBuildLock } from '../rancher-machine/plugin-executable.js';

const run = promisify(execFile);
export const CHART_NAME = 'harvester-machine-controller';

/**
 * The memory settings scripts/build-image.sh puts into the controller image's environment:
 * V8's young generation at 2 MiB semi-spaces instead of 16, its old generation at
 * half the container's memory limit (Node reads the cgroup's limit; without one, half the
 * machine's), and glibc's malloc at two arenas. The scale benchmark runs the executable with
 * them; the release test checks the image has them.
 */
export const CONTROLLER_IMAGE_ENV = {
  NODE_OPTIONS: '--max-semi-space-size=2 --max-old-space-size-percentage=50',
  MALLOC_ARENA_MAX: '2',
} as const;

export interface ReleaseArtifacts {
  dir: string;
  version: string;
  /** The labels' revision and the archives' time stamp the artifacts were made with. */
  revision: string;
  sourceDateEpoch: number;
  driverTarball: string;
  driverChecksum: string;
  executable: string;
  image: string;
  chart: string;
}

function listFiles(root: string, dir: string, out: string[]): void {
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) listFiles(root, rel, out);
    else out.push(rel);
  }
}

/** Hash of the artifacts' inputs beyond the executable's: the release scripts and the chart. */
export function releaseInputHash(root = repoRoot()): string {
  const files = ['scripts/release.sh', 'scripts/build-image.sh', 'package.json'];
  listFiles(root, 'deploy/helm/harvester-machine-controller', files);
  files.sort();
  const hash = createHash('sha256').update(pluginSourceHash(root));
  for (const rel of files)
    hash
      .update(rel)
      .update('\0')
      .update(fs.readFileSync(path.join(root, rel)))
      .update('\0');
  return hash.digest('hex').slice(0, 16);
}

const TEST_EPOCH = 1_700_000_000;

function describe(dir: string, revision: string, sourceDateEpoch: number): ReleaseArtifacts {
  const version = (
    JSON.parse(fs.readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as { version: string }
  ).version;
  return {
    dir,
    version,
    revision,
    sourceDateEpoch,
    driverTarball: path.join(dir, 'docker-machine-driver-harvester-amd64.tar.gz'),
    driverChecksum: path.join(dir, 'docker-machine-driver-harvester-amd64.tar.gz.sha256'),
    executable: path.join(dir, 'harvester-machine-linux-amd64'),
    image: path.join(dir, `${CHART_NAME}-${version}.oci.tar`),
    chart: path.join(dir, `${CHART_NAME}-${version}.tgz`),
  };
}

let cached: Promise<ReleaseArtifacts> | undefined;

/** The release artifacts for the current sources: made on first use, then from the cache. */
export function releaseArtifacts(): Promise<ReleaseArtifacts> {
  cached ??= locate();
  return cached;
}

async function locate(): Promise<ReleaseArtifacts> {
  const given = process.env.HARVESTER_RELEASE_DIR;
  if (given) {
    const { stdout } = await run('git', ['rev-parse', 'HEAD'], { cwd: repoRoot() }).catch(() => ({
      stdout: '',
    }));
    return describe(path.resolve(given), stdout.trim(), Number(process.env.SOURCE_DATE_EPOCH ?? 0));
  }
  const root = repoRoot();
  const key = releaseInputHash(root);
  const base = path.join(cacheRoot(), 'release');
  const dir = path.join(base, key);
  const revision = `test-${key}`;
  // The one executable: the tarball's plugin, the laptop CLI and the image's controller.
  const executable = await pluginExecutable();
  fs.mkdirSync(base, { recursive: true });
  const artifacts = describe(dir, revision, TEST_EPOCH);
  await withBuildLock(
    `${dir}.lock`,
    () => fs.existsSync(artifacts.chart),
    async () => {
      await run('bash', ['scripts/release.sh'], {
        cwd: root,
        maxBuffer: 16 * 1024 * 1024,
        env: {
          ...process.env,
          EXECUTABLE: executable,
          RELEASE_DIR: `${dir}.partial`,
          REVISION: revision,
          SOURCE_DATE_EPOCH: String(TEST_EPOCH),
        },
      }).catch((err: { stderr?: string; message: string }) => {
        fs.rmSync(`${dir}.partial`, { recursive: true, force: true });
        throw new Error(`scripts/release.sh failed: ${err.stderr?.trim() || err.message}`);
      });
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(`${dir}.partial`, dir);
      prune(base, key);
    },
  );
  // Mark it used, so that pruning by another checkout leaves it alone.
  const now = new Date();
  fs.utimesSync(dir, now, now);
  return artifacts;
}

/** Keeps the newest few releases (about 220 MB each). */
function prune(base: string, keep: string): void {
  const old = fs
    .readdirSync(base)
    .filter((e) => e !== keep && !e.includes('.'))
    .map((e) => ({ p: path.join(base, e), t: fs.statSync(path.join(base, e)).mtimeMs }))
    .sort((a, b) => b.t - a.t)
    .slice(2);
  for (const o of old) if (Date.now() - o.t > 10 * 60_000) fs.rmSync(o.p, { recursive: true, force: true });
}
