// The executable of an older commit, for a baseline in the same run: the commit's tree
// exported into a temp dir (git archive: nothing in the repository is written), its build
// script run there with this checkout's node_modules, the tree removed again. The build's expensive parts (the Node
// runtime part) come from the shared cache, so this takes seconds once the cache is warm.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../sandbox/repo.js';
import { EXECUTABLE_NAME } from '../../sandbox/rancher-machine/plugin-executable.js';

const run = promisify(execFile);

export interface OlderExecutable {
  commit: string;
  /** The executable (harvester-machine; install it under the plugin's name to use it as one). */
  path: string;
  remove(): void;
}

export async function buildExecutableAt(commit: string): Promise<OlderExecutable> {
  const root = repoRoot();
  if (!/^[0-9a-f]{7,40}$/i.test(commit)) throw new Error(`--baseline: "${commit}" is not a commit id`);
  const full = (
    await run('git', ['rev-parse', '--verify', `${commit}^{commit}`], { cwd: root })
  ).stdout.trim();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `hm-baseline-${full.slice(0, 7)}-`));
  const tree = path.join(dir, 'tree');
  const remove = (): void => fs.rmSync(dir, { recursive: true, force: true });
  try {
    fs.mkdirSync(tree);
    await run('bash', ['-c', 'git archive --format=tar "$1" | tar -x -C "$2"', 'archive', full, tree], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024,
    });
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(tree, 'node_modules'));
    const out = path.join(dir, EXECUTABLE_NAME);
    await run('bash', ['scripts/build-executable.sh', out], {
      cwd: tree,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 20 * 60_000,
    });
    fs.rmSync(tree, { recursive: true, force: true });
    return { commit: full, path: out, remove };
  } catch (err) {
    remove();
    const e = err as { stderr?: string; message: string };
    throw new Error(`building the executable of ${commit} failed: ${e.stderr?.trim() || e.message}`, {
      cause: err,
    });
  }
}
