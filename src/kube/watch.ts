// A single watch stream. It ends (done resolves) when the server closes it, when no
// byte arrived for idleTimeoutMs (a half-open connection after an apiserver restart
// otherwise hangs forever), when it outlives its server-side timeout by far, or when stop()
// is called; done rejects with a classified KubeError on an HTTP error or a watch ERROR
// event (410 Gone included). Every read is bounded in time and size: an error answer whose
// body never ends, or a stream that trickles bytes forever, cannot hold a caller.
// Three parts: connect (the request and a bounded error answer, here), the stream's clocks
// (watch-timers.ts) and the wire format (watch-decode.ts).
import type http from 'node:http';
import { describeOperation, resourcePath, type KubeObject, type ResourceType } from './resources.js';
import type { Transport } from './transport.js';
import { LineSplitter, MAX_LINE_BYTES, decodeWatchLine, type WatchEvent } from './watch-decode.js';
import { StreamTimers } from './watch-timers.js';

export type { WatchEvent, WatchEventType } from './watch-decode.js';

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  /** Server-side duration of the stream. */
  timeoutSeconds?: number;
  /** Client-side: end the stream when nothing arrived for this long. */
  idleTimeoutMs?: number;
  /** Deadline for the server to start answering. */
  connectTimeoutMs?: number;
}

/** A Status body is a few hundred bytes; more than this of an error answer is not read. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** How long past its server-side timeout a stream may run before it is ended here. */
const STREAM_GRACE_MS = 30_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

export function openWatch<T extends KubeObject>(
  transport: Transport,
  type: ResourceType,
  opts: WatchOptions,
  onEvent: (event: WatchEvent<T>) => void,
  /** The connection broke mid-stream (the server went away): the watch still ends normally. */
  onBroken: () => void = () => undefined,
): { done: Promise<void>; stop: () => void } {
  const at = opts.namespace !== undefined ? { namespace: opts.namespace } : {};
  const operation = describeOperation('watch', type, at);
  const timeoutSeconds = opts.timeoutSeconds ?? 300;
  const idleMs = opts.idleTimeoutMs ?? timeoutSeconds * 1000 + 15_000;
  const controller = new AbortController();
  let stopped = false;
  const done = (async () => {
    const opened = await connect(transport, `${resourcePath(type, at)}?${watchQuery(opts, timeoutSeconds)}`, {
      operation,
      connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      idleMs,
      signal: controller.signal,
    }).catch((err: unknown) => {
      if (stopped) return undefined;
      throw err;
    });
    if (!opened || stopped) {
      opened?.abort();
      return;
    }
    await readStream(opened, {
      idleMs,
      lifetimeMs: timeoutSeconds * 1000 + STREAM_GRACE_MS,
      signal: controller.signal,
      stopped: () => stopped,
      onLine: (line) => {
        const event = decodeWatchLine<T>(line, operation);
        if (!stopped) onEvent(event);
      },
      onBroken,
      // A line is one event: the client's answer cap bounds it too (a guest's is a few MiB).
      splitter: new LineSplitter(
        operation,
        Math.min(MAX_LINE_BYTES, transport.maxResponseBytes),
        transport.server.origin,
      ),
    });
  })();
  return {
    done,
    stop: () => {
      stopped = true;
      controller.abort();
    },
  };
}

function watchQuery(opts: WatchOptions, timeoutSeconds: number): string {
  const params = new URLSearchParams({
    watch: '1',
    allowWatchBookmarks: 'true',
    timeoutSeconds: String(timeoutSeconds),
  });
  if (opts.labelSelector) params.set('labelSelector', opts.labelSelector);
  if (opts.fieldSelector) params.set('fieldSelector', opts.fieldSelector);
  if (opts.resourceVersion) params.set('resourceVersion', opts.resourceVersion);
  return params.toString();
}

interface Opened {
  response: http.IncomingMessage;
  abort: () => void;
}

/** Opens the stream; an answer other than 200 is read (bounded) and thrown as its KubeError. */
async function connect(
  transport: Transport,
  path: string,
  o: { operation: string; connectTimeoutMs: number; idleMs: number; signal: AbortSignal },
): Promise<Opened> {
  const opened = await transport.open({
    method: 'GET',
    path,
    operation: o.operation,
    timeoutMs: o.connectTimeoutMs,
    signal: o.signal,
  });
  const statusCode = opened.response.statusCode ?? 0;
  if (statusCode === 200) return opened;
  // Given no longer than a silent watch or a connect would be.
  const deadlineMs = Math.min(o.idleMs, o.connectTimeoutMs);
  const body = await readBounded(opened.response, opened.abort, MAX_ERROR_BODY_BYTES, deadlineMs);
  if (o.signal.aborted) return opened;
  throw transport.statusError(o.operation, statusCode, body, opened.response.headers);
}

/**
 * Reads lines until the server ends the stream, a clock runs out, the caller stops it or a
 * line fails (an ERROR event, an oversized or broken line: done rejects with it).
 */
function readStream(
  { response, abort }: Opened,
  o: {
    idleMs: number;
    lifetimeMs: number;
    signal: AbortSignal;
    stopped: () => boolean;
    onLine: (line: string) => void;
    onBroken: () => void;
    splitter: LineSplitter;
  },
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const finish = (err?: Error): void => {
      settled = true;
      timers.clear();
      if (err && !o.stopped()) reject(err);
      else resolve();
    };
    /** Ends the stream from this side (settled first: the broken socket that follows is ours). */
    const end = (err?: Error): void => {
      finish(err);
      abort();
    };
    const timers = new StreamTimers(o.idleMs, o.lifetimeMs, () => end());
    o.signal.addEventListener('abort', () => end());
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      timers.touched();
      try {
        o.splitter.push(chunk, o.onLine);
      } catch (err) {
        end(err instanceof Error ? err : new Error(String(err)));
      }
    });
    response.on('end', () => finish());
    // A broken stream is an ordinary end (the caller resumes), and news of the server.
    response.on('error', () => {
      if (!settled && !o.stopped()) o.onBroken();
      finish();
    });
  });
}

/**
 * Reads an error answer's body up to `maxBytes` or `deadlineMs`, whichever comes first, then
 * drops the connection: the status code is known, the body only adds the server's words.
 */
function readBounded(
  stream: NodeJS.ReadableStream,
  abort: () => void,
  maxBytes: number,
  deadlineMs: number,
): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (cut: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (cut) abort();
      resolve(Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8'));
    };
    const timer = setTimeout(() => settle(true), deadlineMs);
    stream.on('data', (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      if (size >= maxBytes) settle(true);
    });
    stream.on('end', () => settle(false));
    stream.on('error', () => settle(false));
  });
}
