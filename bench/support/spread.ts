// How the benchmarks summarise repeated runs (docs/decisions/0028-bench-method.md): the median
// of N warmed runs with their spread (lowest and highest), never one run; and a timed figure
// that depends on KubeVirt's own controllers always shown beside the driver's own lag.

export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function median(xs: readonly number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  if (s.length === 0) return NaN;
  return s.length % 2 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

export function spread(xs: readonly number[]): Spread {
  const s = xs.filter((x) => Number.isFinite(x));
  return {
    median: median(s),
    min: s.length ? Math.min(...s) : NaN,
    max: s.length ? Math.max(...s) : NaN,
    n: s.length,
  };
}

/** "7619 ms (5100–9800)": the median and, when there is more than one run, the lowest and highest. */
export function showMs(xs: readonly number[]): string {
  const s = spread(xs);
  if (s.n === 0) return '? ms';
  const r = (v: number): string => String(Math.round(v));
  return s.n > 1 ? `${r(s.median)} ms (${r(s.min)}–${r(s.max)})` : `${r(s.median)} ms (1 run)`;
}
