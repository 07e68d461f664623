// The order the suite runs its files in: those that start real processes (a control plane, and
// with it a sandbox, KubeVirt or Harvester) first, the rest after them. Three files run at a
// time; short files at the end fill the cores while the last long ones finish, instead of one
// long file running alone at the end. A file counts as long when its imports, followed through
// the compiled tree, reach the module that starts kube-apiserver, or when it runs one of the
// sandbox's commands (dist/sandbox/bin/*.js: the walkthrough, the sandbox CLI) as a process.
// A test file that another one imports (test/shared-sandbox/: several files on one sandbox, one
// after another, ADR 0031) runs inside that one, not by itself; the files that run others come
// right after the sandbox commands, as they are the longest after them.
// Run by scripts/test.sh: `node dist/test/support/test-order.js <files...>` prints them ordered.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The compiled module that starts kube-apiserver, relative to dist/. */
export const PROCESS_STARTER = path.join('sandbox', 'control-plane', 'control-plane.js');

const IMPORT =
  /(?:^\s*(?:import|export)\b[^'"\n]*?\bfrom\s*|^\s*import\s*|\bimport\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/gm;
/** A sandbox command named in a test's text: a path to dist/sandbox/bin/<name>.js, whole or as path.join's parts. */
const SANDBOX_COMMAND = /sandbox['",\s/]+bin['",\s/]+[\w-]+\.js/;

/** The relative modules one compiled file imports (static and dynamic), as absolute paths. */
export function importsOf(file: string, source: string): string[] {
  return [...source.matchAll(IMPORT)].map((m) => path.resolve(path.dirname(file), m[1]!));
}

/**
 * Whether `file` reaches `target` through its imports, or runs a sandbox command; `read` gives a
 * module's text (undefined: none).
 */
export function reaches(
  file: string,
  target: string,
  read: (file: string) => string | undefined,
  seen = new Map<string, boolean>(),
): boolean {
  const known = seen.get(file);
  if (known !== undefined) return known;
  seen.set(file, false); // a circle does not reach by itself
  if (file === target) return (seen.set(file, true), true);
  const source = read(file);
  const found =
    source !== undefined &&
    (SANDBOX_COMMAND.test(source) || importsOf(file, source).some((dep) => reaches(dep, target, read, seen)));
  seen.set(file, found);
  return found;
}

const TEST_FILE = /_test\.js$/;

/**
 * The test files of `files` that another of them imports directly, each with the file it runs
 * inside. A file imported by two would run twice: refused.
 */
export function runInside(
  files: readonly string[],
  read: (file: string) => string | undefined,
): Map<string, string> {
  const listed = new Set(files.map((f) => path.resolve(f)));
  const inside = new Map<string, string>();
  for (const file of files) {
    for (const dep of importsOf(path.resolve(file), read(path.resolve(file)) ?? '')) {
      if (!TEST_FILE.test(dep) || !listed.has(dep)) continue;
      const other = inside.get(dep);
      if (other !== undefined && other !== file)
        throw new Error(`${dep} is imported by two test files (${other}, ${file}): it would run twice`);
      inside.set(dep, file);
    }
  }
  return inside;
}

/**
 * The files ordered: those that run a sandbox command (the longest: a whole walkthrough) first,
 * then those running other test files, then the others reaching `target`, then the rest; each
 * group in its given order. Files another one runs are left out.
 */
export function orderTestFiles(
  files: readonly string[],
  target: string,
  read: (file: string) => string | undefined,
): string[] {
  const inside = runInside(files, read);
  const own = files.filter((f) => !inside.has(path.resolve(f)));
  const hosts = new Set(inside.values());
  const seen = new Map<string, boolean>();
  const commands = own.filter((f) => SANDBOX_COMMAND.test(read(path.resolve(f)) ?? ''));
  const rest = own.filter((f) => !commands.includes(f));
  const running = rest.filter((f) => hosts.has(f));
  const long = rest.filter((f) => !running.includes(f) && reaches(path.resolve(f), target, read, seen));
  return [...commands, ...running, ...long, ...rest.filter((f) => !running.includes(f) && !long.includes(f))];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  // Each file is asked for up to three times (imported test files, sandbox commands, the import walk): read once.
  const texts = new Map<string, string | undefined>();
  const read = (file: string): string | undefined => {
    if (!texts.has(file)) {
      try {
        texts.set(file, fs.readFileSync(file, 'utf8'));
      } catch {
        texts.set(file, undefined);
      }
    }
    return texts.get(file);
  };
  const ordered = orderTestFiles(process.argv.slice(2), path.join(dist, PROCESS_STARTER), read);
  process.stdout.write(ordered.map((f) => `${f}\n`).join(''));
}
