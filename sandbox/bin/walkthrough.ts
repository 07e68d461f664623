// The main job (`npm run walkthrough`, after scripts/setup.sh): the sandbox walkthrough,
// sandbox/walkthrough/walkthrough.ts. Exits 0 when every check passed, 1 when one failed,
// 130/143 when interrupted; everything it started is stopped in every case. `--stand-ins` runs it
// on the stand-ins that play Harvester's webhook and controllers instead of Harvester's own.
import { runWalkthrough } from '../walkthrough/walkthrough.js';

const run = runWalkthrough(undefined, { ownHarvester: !process.argv.slice(2).includes('--stand-ins') });
let exiting = false;
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const) {
  // The sandbox's own handler kills its processes at once and re-raises the signal, so
  // this runs twice: only the first counts.
  process.on(signal, () => {
    if (exiting) return;
    exiting = true;
    void run.interrupt(signal).finally(() => process.exit(code));
  });
}
const code = await run.done;
if (!exiting) process.exit(code);
