// Fault injection and request counting at the front proxy: answers a test chose (429 with
// Retry-After, 500, 503) instead of forwarding, for exercising retries; a count of every
// request seen, per method and path (benchmarks count API requests); and cutting every open
// watch (a dropped connection in the middle of a wait).
import type http from 'node:http';
import { failure, internalError, writeApiserverStatus, type Status } from './status.js';

export interface FaultSpec {
  /** Any method when absent. WATCH is not a method here: a watch is a GET. */
  method?: string;
  /** Tested against the path as the client sent it (no query), /k8s/clusters/<id> prefix included. */
  pathPattern: RegExp;
  status: 429 | 500 | 503;
  /** How many matching requests get this answer. */
  times: number;
  retryAfterSeconds?: number;
}

export interface RequestCount {
  /** The HTTP method, or WATCH for a watch. */
  method: string;
  path: string;
  count: number;
}

export interface FaultControl {
  inject(spec: FaultSpec): void;
  clear(): void;
  /** Every method and path seen since the start (or the last resetCounts), with counts. */
  requests(): RequestCount[];
  /** How many requests matched (all when no filter). */
  count(filter?: { method?: string; pathPattern?: RegExp }): number;
  resetCounts(): void;
  /** Cuts every open watch stream; returns how many were cut. */
  dropWatches(): number;
}

const INJECTED = 'injected by the sandbox front proxy';

/** RegExp.test without the state a /g or /y pattern would carry from one call to the next. */
function matches(pattern: RegExp, text: string): boolean {
  pattern.lastIndex = 0;
  return pattern.test(text);
}

export function faultStatus(spec: FaultSpec): Status {
  switch (spec.status) {
    case 429:
      return failure(429, 'TooManyRequests', 'Too many requests, please try again later.', {
        ...(spec.retryAfterSeconds !== undefined ? { retryAfterSeconds: spec.retryAfterSeconds } : {}),
      });
    case 500:
      return internalError(INJECTED);
    case 503:
      return failure(
        503,
        'ServiceUnavailable',
        `the server is currently unable to handle the request (${INJECTED})`,
        {
          ...(spec.retryAfterSeconds !== undefined ? { retryAfterSeconds: spec.retryAfterSeconds } : {}),
        },
      );
  }
}

export class Faults implements FaultControl {
  private faults: FaultSpec[] = [];
  private counts = new Map<string, RequestCount>();

  constructor(private readonly dropOpenWatches: () => number) {}

  inject(spec: FaultSpec): void {
    if (!Number.isInteger(spec.times) || spec.times < 1)
      throw new Error('faults.inject: times must be a positive integer');
    this.faults.push({ ...spec, method: spec.method?.toUpperCase() });
  }

  clear(): void {
    this.faults = [];
  }

  record(method: string, path: string, watch: boolean): void {
    const m = watch ? 'WATCH' : method.toUpperCase();
    const key = `${m} ${path}`;
    const entry = this.counts.get(key) ?? { method: m, path, count: 0 };
    entry.count++;
    this.counts.set(key, entry);
  }

  requests(): RequestCount[] {
    return [...this.counts.values()].map((c) => ({ ...c }));
  }

  count(filter: { method?: string; pathPattern?: RegExp } = {}): number {
    let total = 0;
    for (const c of this.counts.values()) {
      if (filter.method && c.method !== filter.method.toUpperCase()) continue;
      if (filter.pathPattern && !matches(filter.pathPattern, c.path)) continue;
      total += c.count;
    }
    return total;
  }

  resetCounts(): void {
    this.counts.clear();
  }

  dropWatches(): number {
    return this.dropOpenWatches();
  }

  /** Answers the request with an injected fault when one matches; true when it did. */
  answer(req: http.IncomingMessage, res: http.ServerResponse, path: string): boolean {
    const method = (req.method ?? 'GET').toUpperCase();
    const index = this.faults.findIndex(
      (f) => (f.method === undefined || f.method === method) && matches(f.pathPattern, path),
    );
    const spec = this.faults[index];
    if (!spec) return false;
    spec.times--;
    if (spec.times <= 0) this.faults.splice(index, 1);
    req.resume(); // the body is not needed
    writeApiserverStatus(
      res,
      faultStatus(spec),
      spec.retryAfterSeconds !== undefined ? { 'Retry-After': String(spec.retryAfterSeconds) } : {},
    );
    return true;
  }
}
