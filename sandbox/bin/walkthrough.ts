// The main job (`npm run walkthrough`, after scripts/setup.sh): the sandbox walkthrough,
// sandbox/walkthrough/walkthrough.ts. Exits 0 when every check passed, 1 when one failed,
// 130/143 when interrupted; everything it started is stopped in every case.
import { runWalkthrough } from '../walkthrough/walkthrough.js';

const run = runWalkthrough();
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
