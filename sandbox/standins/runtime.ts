// What the stand-in controllers share besides the manager (src/kube/manager.ts), on which
// every one of them is declared: JSON comparison blind to key order, and timestamps.

/** Deep equality of JSON values, blind to key order (the apiserver reorders keys). */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

export const nowIso = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
