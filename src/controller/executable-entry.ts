// The controller as a single executable (scripts/build-executable.sh), until one executable
// serves every role: `harvester-machine controller [flags]` and `... controller remove-hooks`
// take the same arguments here, so the image's entrypoint does not change when it does.
// No top-level await: the build bundles this file to CommonJS.
import { main } from './main.js';

if (process.argv[2] === 'controller') process.argv.splice(2, 1);
main().catch((err: unknown) => {
  process.stderr.write(`harvester-machine-controller: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
