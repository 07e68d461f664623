// A single watch stream. It ends (done resolves) when the server closes it, when no
// byte arrived for idleTimeoutMs (a half-open connection after an apiserver restart
// otherwise hangs forever), when it outlives its server-side timeout by far, or when stop()
// is called; done rejects with a classified KubeError on an HTTP error or a watch ERROR
// event (410 Gone included). Every read is bounded in time and size: an error answer whose
// body never ends, or a stream that trickles bytes forever, cannot hold a caller.
import { KubeError, classifyStatus, type KubeStatus } from './errors.js';
import { describeOperation, resourcePath, type KubeObject, type ResourceType } from './resources.js';
import type { Transport } from './transport.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

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

const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** A Status body is a few hundred bytes; more than this of an error answer is not read. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** How long past its server-side timeout a stream may run before it is ended here. */
const STREAM_GRACE_MS = 30_000;

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
  const params = new URLSearchParams({
    watch: '1',
    allowWatchBookmarks: 'true',
    timeoutSeconds: String(timeoutSeconds),
  });
  if (opts.labelSelector) params.set('labelSelector', opts.labelSelector);
  if (opts.fieldSelector) params.set('fieldSelector', opts.fieldSelector);
  if (opts.resourceVersion) params.set('resourceVersion', opts.resourceVersion);
  const controller = new AbortController();
  let stopped = false;

  const idleMs = opts.idleTimeoutMs ?? timeoutSeconds * 1000 + 15_000;
  const done = (async () => {
    let opened;
    try {
      opened = await transport.open({
        method: 'GET',
        path: `${resourcePath(type, at)}?${params.toString()}`,
        operation,
        timeoutMs: opts.connectTimeoutMs ?? 30_000,
        signal: controller.signal,
      });
    } catch (err) {
      if (stopped) return;
      throw err;
    }
    const { response, abort } = opened;
    const statusCode = response.statusCode ?? 0;
    if (statusCode !== 200) {
      // Given no longer than a silent watch or a connect would be.
      const deadlineMs = Math.min(idleMs, opts.connectTimeoutMs ?? 30_000);
      const body = await readBounded(response, abort, MAX_ERROR_BODY_BYTES, deadlineMs);
      if (stopped) return;
      throw transport.statusError(operation, statusCode, body, response.headers);
    }
    await new Promise<void>((resolve, reject) => {
      let idle = setTimeout(onIdle, idleMs);
      const lifetime = setTimeout(onIdle, timeoutSeconds * 1000 + STREAM_GRACE_MS);
      function onIdle(): void {
        end();
      }
      let buffered = '';
      let settled = false;
      const finish = (err?: Error): void => {
        settled = true;
        clearTimeout(idle);
        clearTimeout(lifetime);
        if (err && !stopped) reject(err);
        else resolve();
      };
      /** Ends the stream from this side (settled first: the broken socket that follows is ours). */
      const end = (err?: Error): void => {
        finish(err);
        abort();
      };
      controller.signal.addEventListener('abort', () => end());
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        clearTimeout(idle);
        idle = setTimeout(onIdle, idleMs);
        // Only the new chunk is searched for line ends: rescanning a long partial line on
        // every chunk would be quadratic in its length.
        let start = 0;
        let newline: number;
        while ((newline = chunk.indexOf('\n', start)) >= 0) {
          const line = (buffered + chunk.slice(start, newline)).trim();
          buffered = '';
          start = newline + 1;
          if (!line) continue;
          try {
            handleLine(line);
          } catch (err) {
            end(err instanceof Error ? err : new Error(String(err)));
            return;
          }
        }
        buffered += chunk.slice(start);
        if (buffered.length > MAX_LINE_BYTES) {
          end(new KubeError('Unknown', operation, `${operation}: watch event larger than 16 MiB`));
        }
      });
      response.on('end', () => finish());
      // A broken stream is an ordinary end (the caller resumes), and news of the server.
      response.on('error', () => {
        if (!settled && !stopped) onBroken();
        finish();
      });
    });
  })();

  function handleLine(line: string): void {
    const event = JSON.parse(line) as { type: string; object: unknown };
    if (event.type === 'ERROR') {
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
    if (stopped) return;
    onEvent(event as WatchEvent<T>);
  }

  return {
    done,
    stop: () => {
      stopped = true;
      controller.abort();
    },
  };
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
