// Build step (scripts/build-executable.sh): writes V8's code cache for the bundle, run by
// the very Node binary the executable carries. Usage: node make-code-cache.cjs <bundle> <out>;
// `--check <bundle> <cache>` (run without the build's flags) exits 1 if V8 would reject it.
//
// A cache made right after compiling holds only the bundle's top level; each module's body
// is a lazily compiled function (the dispatcher imports a role's modules only when it is
// chosen), and compiling those is most of the start-up. So the bundle is first run as each
// role far enough to load all of its modules, on a path that touches nothing outside the
// process: the plugin without rancher-machine's token (RegisterDriver's refusal), the CLI
// and the controller with --help. Their output is swallowed and their exit is a no-op; the
// cache then holds every function compiled on the way.
import fs from 'node:fs';
import Module from 'node:module';
import path from 'node:path';
import { compileBundle, type ModuleWrapper } from './code-cache.js';

const WARM_UPS: ReadonlyArray<{ program: string; args: string[] }> = [
  { program: 'docker-machine-driver-harvester', args: [] },
  { program: 'harvester-machine', args: ['--help'] },
  { program: 'harvester-machine', args: ['controller', '--help'] },
];

async function main(bundle: string, out: string): Promise<void> {
  const filename = path.resolve(bundle);
  // Compiled under its bare name: V8 keeps the name in the cache, and the build directory's
  // name changes from build to build (at run time the cache is accepted under any name).
  const script = compileBundle(fs.readFileSync(filename, 'utf8'), path.basename(filename));
  const wrapper = script.runInThisContext() as ModuleWrapper;
  const realExit = process.exit.bind(process);
  // Still calls back: the CLI waits for its output to be flushed before it exits.
  const swallow = ((_chunk: unknown, ...rest: unknown[]) => {
    const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
    if (callback) process.nextTick(callback);
    return true;
  }) as typeof process.stdout.write;
  process.stdout.write = swallow;
  process.stderr.write = swallow;
  delete process.env.MACHINE_PLUGIN_TOKEN;
  for (const { program, args } of WARM_UPS) {
    await new Promise<void>((resolve) => {
      process.exit = (() => resolve()) as typeof process.exit;
      process.argv = [process.execPath, `/warm-up/${program}`, ...args];
      const mod = { exports: {} } as unknown as Parameters<ModuleWrapper>[2];
      wrapper(mod.exports, Module.createRequire(filename), mod, filename, path.dirname(filename));
    });
  }
  fs.writeFileSync(out, script.createCachedData());
  realExit(0);
}

function check(bundle: string, cache: string): void {
  const script = compileBundle(fs.readFileSync(bundle, 'utf8'), path.resolve(bundle), fs.readFileSync(cache));
  if (script.cachedDataRejected) {
    process.stderr.write(`V8 rejects the code cache ${cache} (flags or version differ from the build's)\n`);
    process.exit(1);
  }
}

const args = process.argv.slice(2);
const checking = args[0] === '--check';
const [bundle, out] = checking ? args.slice(1) : args;
if (!bundle || !out) {
  process.stderr.write('usage: make-code-cache [--check] <bundle.cjs> <cache>\n');
  process.exit(2);
}
if (checking) check(bundle, out);
else void main(bundle, out);
