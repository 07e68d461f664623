// The single executable as Rancher ships it, what `npm run build` makes
// (scripts/build-executable.sh: a static launcher carrying Node, the libraries it links and
// the bundle of src/bin/harvester-machine.ts). It is built once per source version into the
// shared cache, keyed by a hash of everything it is made from, so a changed driver is never
// run through a stale binary (the walkthrough and the interop tests share it). The cache
// holds it under both names: docker-machine-driver-harvester (the plugin, whatever the
// arguments) and harvester-machine (the CLI, or `controller`).
// HARVESTER_PLUGIN_EXECUTABLE=<file> uses a given binary instead (a release artifact).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot, repoRoot } from '../repo.js';

const run = promisify(execFile);
export const PLUGIN_NAME = 'docker-machine-driver-harvester';
export const EXECUTABLE_NAME = 'harvester-machine';
/** A build that holds the lock longer than this died: take the lock over. */
const STALE_LOCK_MS = 10 * 60_000;
/**
 * Older builds beyond the newest few are pruned (35 MB each, and the sources change all
 * day). Safe for runs in other checkouts: each test hard-links (or copies) the binary into
 * its own temp dir before using it.
 */
const KEEP_BUILDS = 3;
const PRUNE_MIN_AGE_MS = 10 * 60_000;

function listSources(root: string, dir: string, out: string[], wanted: (name: string) => boolean): void {
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) listSources(root, rel, out, wanted);
    else if (wanted(entry.name)) out.push(rel);
  }
}

/**
 * Hash of what the executable is built from: src/**, the launcher's Go sources, the
 * lockfile, tsconfig and the build script.
 */
export function pluginSourceHash(root = repoRoot()): string {
  const files: string[] = [];
  listSources(root, 'src', files, (name) => name.endsWith('.ts') && !name.endsWith('_test.ts'));
  listSources(root, 'launcher', files, (name) => /\.go$|^go\.(mod|sum)$/.test(name));
  files.sort();
  files.push('package-lock.json', 'tsconfig.json', 'scripts/build-executable.sh');
  const hash = createHash('sha256');
  for (const rel of files)
    hash
      .update(rel)
      .update('\0')
      .update(fs.readFileSync(path.join(root, rel)))
      .update('\0');
  return hash.digest('hex').slice(0, 16);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** mkdir is atomic: whoever creates the lock directory builds; the others wait for the result. */
export async function withBuildLock<T>(
  lockDir: string,
  ready: () => boolean,
  build: () => Promise<T>,
): Promise<T | undefined> {
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (ready()) return undefined;
      const age = Date.now() - (fs.statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) fs.rmSync(lockDir, { recursive: true, force: true });
      await sleep(500);
    }
  }
  try {
    return ready() ? undefined : await build();
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

function pruneOldBuilds(dir: string, keep: string): void {
  const builds = fs
    .readdirSync(dir)
    .filter((e) => e !== keep && !e.includes('.'))
    .map((e) => ({
      path: path.join(dir, e),
      mtimeMs: fs.statSync(path.join(dir, e), { throwIfNoEntry: false })?.mtimeMs ?? 0,
    }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const old of builds.slice(KEEP_BUILDS - 1)) {
    if (Date.now() - old.mtimeMs > PRUNE_MIN_AGE_MS) fs.rmSync(old.path, { recursive: true, force: true });
  }
}

/**
 * Where the executable unpacks its runtime in tests and the sandbox: one directory shared by
 * every run (as on a user's machine), instead of each job's fresh home (as in Rancher's pods,
 * where every job starts cold; test/interop/empty-root_test.ts runs it that way).
 */
export function unpackCacheEnv(): { XDG_CACHE_HOME: string } {
  const dir = path.join(cacheRoot(), 'executable-cache');
  // The launcher creates its directories below $XDG_CACHE_HOME, not $XDG_CACHE_HOME itself.
  fs.mkdirSync(dir, { recursive: true });
  return { XDG_CACHE_HOME: dir };
}

let cached: Promise<string> | undefined;

/**
 * The executable for the current sources, named docker-machine-driver-harvester (so it is
 * the plugin): built on first use, then from the cache.
 */
export function pluginExecutable(): Promise<string> {
  cached ??= locatePluginExecutable();
  return cached;
}

/**
 * The same executable named harvester-machine (the CLI; `controller` for the controller).
 * With HARVESTER_PLUGIN_EXECUTABLE, a hard link (or copy) of it in a temp dir.
 */
export async function harvesterMachineExecutable(): Promise<string> {
  const plugin = await pluginExecutable();
  const beside = path.join(path.dirname(plugin), EXECUTABLE_NAME);
  return fs.existsSync(beside) ? beside : linkOrCopy(plugin, path.join(givenDir(plugin), EXECUTABLE_NAME));
}

/** A directory for the names of a given executable, one per file version (reused by later runs). */
function givenDir(file: string): string {
  const st = fs.statSync(file);
  const key = createHash('sha256')
    .update(`${fs.realpathSync(file)}\0${st.size}\0${st.mtimeMs}`)
    .digest('hex');
  const dir = path.join(os.tmpdir(), `hm-given-executable-${key.slice(0, 16)}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

async function locatePluginExecutable(): Promise<string> {
  const given = process.env.HARVESTER_PLUGIN_EXECUTABLE;
  if (given) {
    fs.accessSync(given, fs.constants.X_OK);
    if (path.basename(given) === PLUGIN_NAME) return path.resolve(given);
    return linkOrCopy(path.resolve(given), path.join(givenDir(given), PLUGIN_NAME));
  }
  const root = repoRoot();
  const hash = pluginSourceHash(root);
  const base = path.join(cacheRoot(), 'plugin-executable');
  const dir = path.join(base, hash);
  const binary = path.join(dir, PLUGIN_NAME);
  fs.mkdirSync(base, { recursive: true });
  await withBuildLock(
    `${dir}.lock`,
    () => fs.existsSync(binary),
    async () => {
      fs.mkdirSync(dir, { recursive: true });
      const partial = path.join(dir, `${EXECUTABLE_NAME}.partial`);
      try {
        await run('bash', ['scripts/build-executable.sh', partial], {
          cwd: root,
          maxBuffer: 16 * 1024 * 1024,
        });
      } catch (err) {
        fs.rmSync(dir, { recursive: true, force: true });
        const e = err as { stderr?: string; message: string };
        throw new Error(`building the plugin executable failed: ${e.stderr?.trim() || e.message}`, {
          cause: err,
        });
      }
      fs.renameSync(partial, path.join(dir, EXECUTABLE_NAME));
      // Last: its presence says the build is complete.
      fs.linkSync(path.join(dir, EXECUTABLE_NAME), binary);
      pruneOldBuilds(base, hash);
    },
  );
  // Mark it used, so that pruning by another checkout leaves it alone.
  const now = new Date();
  fs.utimesSync(dir, now, now);
  return binary;
}

/**
 * A directory to put first on PATH: the executable under the name rancher-machine looks
 * for (a hard link, so the test's copy survives a prune of the cache; a copy across file
 * systems). Its processes are then recognisable by argv[0] (see plugin-processes.ts).
 */
export function installPlugin(executable: string, binDir: string): string {
  fs.mkdirSync(binDir, { recursive: true });
  return linkOrCopy(executable, path.join(binDir, PLUGIN_NAME));
}

function linkOrCopy(from: string, to: string): string {
  fs.rmSync(to, { force: true });
  try {
    fs.linkSync(from, to);
  } catch {
    fs.copyFileSync(from, to);
    fs.chmodSync(to, 0o755);
  }
  return to;
}
