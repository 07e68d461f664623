// The chaos run's figures as one Markdown table (pasted as is into docs/reliability.md), and
// whether a must-be-0 figure is not 0.
import type { ComponentRate } from './chaos-proxy.js';
import type { FaultKind } from './faults.js';
import type { RunResult } from './run-story.js';

export function summaryTable(opts: {
  results: RunResult[];
  rates: ComponentRate[];
  unplannedExits: number;
  wallMs: number;
  seed: number;
  kinds: readonly FaultKind[];
}): { text: string; failed: boolean } {
  const { results } = opts;
  const sum = (f: (r: RunResult) => number): number => results.reduce((a, r) => a + f(r), 0);
  const mustBeZero: Array<[string, number]> = [
    ['volumes lost (had to stay, were deleted)', sum((r) => r.volumesLost.length)],
    ['volumes leaked after the deadline', sum((r) => r.volumesLeaked.length)],
    ['gates held past the deadline', sum((r) => r.gatesPastDeadline.length)],
    ['duplicate VMs', sum((r) => r.duplicateVms.length)],
    ['VMs left after the cluster was deleted', sum((r) => r.vmsLeft.length)],
    [
      'runs whose story did not finish (a phase past its 240 s bound)',
      results.filter((r) => r.stuck.length > 0).length,
    ],
    ['faults that failed to inject', sum((r) => r.fired.filter((f) => f.error).length)],
  ];
  const fired = opts.kinds.map((k) => {
    const n = sum((r) => r.fired.filter((f) => f.kind === k && !f.error).length);
    return `${k} ×${n}`;
  });
  const walls = results.map((r) => r.wallMs).sort((a, b) => a - b);
  const median = walls[Math.floor(walls.length / 2)] ?? 0;
  const rates = [...opts.rates].sort((a, b) => b.peakPerSecond - a.peakPerSecond);
  const longestGate = Math.max(0, ...results.map((r) => r.longestGateMs));
  const rows: Array<[string, string]> = [
    ['runs', `${results.length} (seed ${opts.seed})`],
    ['faults fired', fired.join(', ')],
    ...mustBeZero.map(([k, v]): [string, string] => [`${k} (must be 0)`, String(v)]),
    ...rates.map((r): [string, string] => [
      `max requests/s: ${r.component}`,
      `${r.peakPerSecond} (${r.total} requests in all)`,
    ]),
    [
      'runs whose create failed under the faults (then deleted whole at once)',
      `${results.filter((r) => r.createsFailed.length > 0).length} (${sum((r) => r.createsFailed.length)} create jobs failed)`,
    ],
    ['longest gate hold', `${(longestGate / 1000).toFixed(0)} s`],
    ['controller exits on their own (step-downs; restarted)', String(opts.unplannedExits)],
    [
      'run wall time, median / max',
      `${(median / 1000).toFixed(1)} s / ${((walls.at(-1) ?? 0) / 1000).toFixed(1)} s`,
    ],
    ['wall time (sandbox start to stop)', `${(opts.wallMs / 60_000).toFixed(1)} min`],
  ];
  const text = ['| figure | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
  return { text, failed: mustBeZero.some(([, v]) => v !== 0) || results.length === 0 };
}
