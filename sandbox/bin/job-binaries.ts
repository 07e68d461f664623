// Builds (or finds in the cache) what Rancher's jobs run in the walkthrough and the tests:
// rancher-machine and the plugin executable; with --release, also what `npm run release` makes
// from these sources (the release tests read it). scripts/setup.sh runs it as a phase after the
// TypeScript compile, so a cold build is announced and timed there, not inside a test.
import { jobBinaries } from '../rancher-machine/binaries.js';
import { releaseArtifacts } from '../release/artifacts.js';

const t0 = Date.now();
const seconds = (): string => ((Date.now() - t0) / 1000).toFixed(1);
try {
  const { rancherMachine, plugin } = await jobBinaries((line) => console.error(`job binaries: ${line}`));
  console.error(
    `job binaries: rancher-machine and plugin executable ready in ${seconds()} s (${rancherMachine}, ${plugin})`,
  );
  if (process.argv.includes('--release')) {
    const release = await releaseArtifacts();
    console.error(`job binaries: release artifacts ready in ${seconds()} s (${release.dir})`);
  }
} catch (err) {
  console.error(`job binaries: step 'build' failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
