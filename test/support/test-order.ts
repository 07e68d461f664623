// The order the suite runs its files in: those that start real processes (a control plane, and
// with it a sandbox, KubeVirt or Harvester) first, the rest after them. Three files run at a
// time; short files at the end fill the cores while the last long ones finish, instead of one
// long file running alone at the end. A file counts as long when its imports, followed through
// the compiled tree, reach the module that starts kube-apiserver, or when it runs one of the
// sandbox's commands (dist/sandbox/bin/*.js: the walkthrough, the sandbox CLI) as a process.
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

/**
 * The files ordered: those that run a sandbox command (the longest: a whole walkthrough) first,
 * then the others reaching `target`, then the rest; each group in its given order.
 */
export function orderTestFiles(
  files: readonly string[],
  target: string,
  read: (file: string) => string | undefined,
): string[] {
  const seen = new Map<string, boolean>();
  const commands = files.filter((f) => SANDBOX_COMMAND.test(read(path.resolve(f)) ?? ''));
  const long = files.filter((f) => !commands.includes(f) && reaches(path.resolve(f), target, read, seen));
  return [...commands, ...long, ...files.filter((f) => !commands.includes(f) && !long.includes(f))];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const read = (file: string): string | undefined => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
  };
  const ordered = orderTestFiles(process.argv.slice(2), path.join(dist, PROCESS_STARTER), read);
  process.stdout.write(ordered.map((f) => `${f}\n`).join(''));
}
