// The first JavaScript the single executable runs: Node's main script (harvester-machine.cjs
// in the payload; see launcher/exec.go). The launcher puts four words before the user's
// arguments: its own path, the bundle, the bundle's code cache, and descriptors to close.
// This loads the bundle with the code cache, as a Node single-executable application
// would, and makes `process` look as it would there: execPath and argv[0] are the launcher
// (so re-executing process.execPath runs this executable again, not the bundled ld.so),
// argv[1] is the path the executable was started by, the user's arguments follow.
import fs from 'node:fs';
import Module from 'node:module';
import path from 'node:path';
import { compileBundle, type ModuleWrapper } from './code-cache.js';

const [exe = '', bundle = '', codeCache = '', closeFds = ''] = process.argv.splice(2, 4);
process.execPath = exe;
process.argv[0] = exe;
process.argv[1] = process.argv0;

const source = fs.readFileSync(bundle, 'utf8');
let cachedData: Buffer | undefined;
try {
  cachedData = fs.readFileSync(codeCache);
} catch {
  // Without it the bundle compiles as usual, a little slower.
}
// Run from memory, the files are descriptors the launcher left open: nothing needs them now.
for (const fd of closeFds.split(',').filter((s) => s !== '')) {
  try {
    fs.closeSync(Number(fd));
  } catch {
    // already closed
  }
}

const wrapper = compileBundle(source, bundle, cachedData).runInThisContext() as ModuleWrapper;
const bundleModule = new Module(bundle);
bundleModule.filename = bundle;
wrapper.call(
  bundleModule.exports,
  bundleModule.exports,
  Module.createRequire(bundle),
  bundleModule,
  bundle,
  path.dirname(bundle),
);
