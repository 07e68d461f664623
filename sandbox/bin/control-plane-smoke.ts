// Starts one control plane, prints how long it took and its memory, stops it.
import { execFileSync } from 'node:child_process';
import { startControlPlane } from '../control-plane/control-plane.js';

const t0 = Date.now();
const cp = await startControlPlane({ name: 'smoke' });
const started = Date.now() - t0;
await new Promise((r) => setTimeout(r, 3000));
const rss = execFileSync('ps', ['-o', 'rss=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' });
console.log(`started in ${started} ms at ${cp.server}\n${rss}`);
await cp.stop();
