// Build step (scripts/build-executable.sh): writes V8's code cache for the bundle, run by
// the very Node binary the executable carries. Usage: node make-code-cache.cjs <bundle> <out>
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
  const script = compileBundle(fs.readFileSync(filename, 'utf8'), filename);
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

const [bundle, out] = process.argv.slice(2);
if (!bundle || !out) {
  process.stderr.write('usage: make-code-cache <bundle.cjs> <out>\n');
  process.exit(2);
}
void main(bundle, out);
