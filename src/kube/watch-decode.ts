// The wire format of a watch: newline-delimited JSON events, each line at most 16 MiB, and
// ERROR events carrying a Status (410 Gone among them) turned into classified KubeErrors.
import { KubeError, classifyStatus, type KubeStatus } from './errors.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * Splits a stream of text chunks into lines. Only the new chunk is searched for line ends:
 * rescanning a long partial line on every chunk would be quadratic in its length.
 */
export class LineSplitter {
  private buffered = '';

  constructor(
    private readonly operation: string,
    /** The most one line may hold (MAX_LINE_BYTES, or the client's smaller answer cap). */
    private readonly maxLineBytes = MAX_LINE_BYTES,
    /** Named in the error: the server. */
    private readonly from = '',
  ) {}

  /** Hands on each complete non-empty line; throws once a partial line outgrows the limit. */
  push(chunk: string, onLine: (line: string) => void): void {
    let start = 0;
    let newline: number;
    while ((newline = chunk.indexOf('\n', start)) >= 0) {
      const line = (this.buffered + chunk.slice(start, newline)).trim();
      this.buffered = '';
      start = newline + 1;
      if (line) onLine(line);
    }
    this.buffered += chunk.slice(start);
    if (this.buffered.length > this.maxLineBytes)
      throw new KubeError(
        'Unknown',
        this.operation,
        `${this.operation}: watch event larger than ${describeSize(this.maxLineBytes)}${this.from ? ` from ${this.from}` : ''}`,
        { tooLarge: true },
      );
  }
}

function describeSize(n: number): string {
  return n >= 1_048_576 ? `${+(n / 1_048_576).toFixed(1)} MiB` : `${+(n / 1024).toFixed(1)} KiB`;
}

/** One line as an event; an ERROR event throws its Status as a KubeError. */
export function decodeWatchLine<T>(line: string, operation: string): WatchEvent<T> {
  const event = JSON.parse(line) as { type: string; object: unknown };
  if (event.type !== 'ERROR') return event as WatchEvent<T>;
  const status = event.object as KubeStatus;
  const code = status.code ?? 500;
  throw new KubeError(
    classifyStatus(code, status),
    operation,
    `${operation}: ${status.message ?? 'watch error'}`,
    {
      statusCode: code,
      ...(status.reason !== undefined ? { reason: status.reason } : {}),
    },
  );
}
