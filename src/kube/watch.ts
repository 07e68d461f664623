// A single watch stream. It ends (done resolves) when the server closes it, when no
// byte arrived for idleTimeoutMs (a half-open connection after an apiserver restart
// otherwise hangs forever), or when stop() is called; done rejects with a classified
// KubeError on an HTTP error or a watch ERROR event (410 Gone included).
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

export function openWatch<T extends KubeObject>(
  transport: Transport,
  type: ResourceType,
  opts: WatchOptions,
  onEvent: (event: WatchEvent<T>) => void,
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
      const body = await readAll(response);
      throw transport.statusError(operation, statusCode, body, response.headers);
    }
    await new Promise<void>((resolve, reject) => {
      const idleMs = opts.idleTimeoutMs ?? timeoutSeconds * 1000 + 15_000;
      let idle = setTimeout(onIdle, idleMs);
      function onIdle(): void {
        abort();
        resolve();
      }
      let buffered = '';
      const finish = (err?: Error): void => {
        clearTimeout(idle);
        if (err && !stopped) reject(err);
        else resolve();
      };
      controller.signal.addEventListener('abort', () => {
        abort();
        finish();
      });
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        clearTimeout(idle);
        idle = setTimeout(onIdle, idleMs);
        buffered += chunk;
        if (buffered.length > MAX_LINE_BYTES) {
          abort();
          finish(new KubeError('Unknown', operation, `${operation}: watch event larger than 16 MiB`));
          return;
        }
        let newline: number;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (!line) continue;
          try {
            handleLine(line);
          } catch (err) {
            abort();
            finish(err instanceof Error ? err : new Error(String(err)));
            return;
          }
        }
      });
      response.on('end', () => finish());
      response.on('error', () => finish()); // a broken stream is an ordinary end: the caller resumes
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

function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
