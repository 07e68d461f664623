// Builds (or finds in the cache) what the walkthrough's Rancher jobs run: rancher-machine
// and the plugin executable. scripts/walkthrough.sh runs it before the walkthrough, so a
// cold build is announced and timed on its own.
import { jobBinaries } from '../rancher-machine/binaries.js';

const t0 = Date.now();
try {
  const { rancherMachine, plugin } = await jobBinaries((line) => console.error(`walkthrough: ${line}`));
  console.error(
    `walkthrough: rancher-machine and plugin executable ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${rancherMachine}, ${plugin})`,
  );
} catch (err) {
  console.error(
    `walkthrough: step 'build the job binaries' failed: ${err instanceof Error ? err.message : String(err)}`,
  );
  process.exit(1);
}
