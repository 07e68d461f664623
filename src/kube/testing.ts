// Test support for src/kube (imported by tests only): a loopback HTTP server that answers as
// each test scripts it and records what it was asked, and clients pointed at it.
import http from 'node:http';
import { after, before, beforeEach } from 'node:test';
import type { AddressInfo } from 'node:net';
import { KubeClient, type KubeClientOptions } from './client.js';
import type { KubeStatus } from './errors.js';

export interface ScriptedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** performance.now() when the request arrived. */
  at: number;
}

export type Script = (req: ScriptedRequest, res: http.ServerResponse) => void;

/** A token shaped like Rancher's, so that errors can describe it without its secret. */
export const SCRIPTED_TOKEN = 'kubeconfig-u-scripted:scriptedsecret0123456789abcdefghijklmnop';

export function kubeconfigFor(url: string, token = SCRIPTED_TOKEN): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: c, cluster: {server: "${url}", insecure-skip-tls-verify: true}}]`,
    `users: [{name: u, user: {token: "${token}"}}]`,
    'contexts: [{name: c, context: {cluster: c, user: u}}]',
    'current-context: c',
  ].join('\n');
}

export class ScriptedServer {
  readonly requests: ScriptedRequest[] = [];
  private readonly clients: KubeClient[] = [];
  private readonly waiters = new Set<() => void>();

  private readonly server: http.Server;

  private constructor(script: Script) {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://scripted');
        const recorded: ScriptedRequest = {
          method: req.method ?? '',
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: performance.now(),
        };
        this.requests.push(recorded);
        for (const w of this.waiters) w();
        script(recorded, res);
      });
    });
  }

  /** Starts on 127.0.0.1; `script` answers every request (it may also never answer). */
  static async start(script: Script): Promise<ScriptedServer> {
    const scripted = new ScriptedServer(script);
    await new Promise<void>((resolve) => scripted.server.listen(0, '127.0.0.1', resolve));
    return scripted;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A client for this server (closed with it); no real sleeps between retries unless asked. */
  client(options: KubeClientOptions = {}): KubeClient {
    const client = KubeClient.fromKubeconfig(kubeconfigFor(this.url), {
      requestTimeoutMs: 10_000,
      sleep: () => Promise.resolve(),
      ...options,
    });
    this.clients.push(client);
    return client;
  }

  /**
   * Resolves with the time the `count`th request matching `filter` arrived (at once if it
   * has), or rejects after `timeoutMs` saying what it waited for.
   */
  arrival(
    count: number,
    filter: (r: ScriptedRequest) => boolean,
    what: string,
    timeoutMs = 10_000,
  ): Promise<number> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const matching = this.requests.filter(filter);
        const hit = matching[count - 1];
        if (!hit) return;
        done();
        resolve(hit.at);
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `not within ${timeoutMs} ms: ${what} (${this.requests.filter(filter).length} of ${count})`,
          ),
        );
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  watches(): ScriptedRequest[] {
    return this.requests.filter((r) => r.query.get('watch') === '1');
  }

  lists(): ScriptedRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && r.query.get('watch') !== '1');
  }

  async close(): Promise<void> {
    this.waiters.clear();
    for (const c of this.clients) c.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export function answerJson(
  res: http.ServerResponse,
  code: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

export function status(
  code: number,
  reason: string,
  message: string,
  extra: Partial<KubeStatus> = {},
): KubeStatus {
  return { kind: 'Status', status: 'Failure', code, reason, message, ...extra };
}

/** One line of a watch stream. */
export function watchLine(type: string, object: unknown): string {
  return JSON.stringify({ type, object }) + '\n';
}

export function secret(name: string, resourceVersion: string, data: Record<string, string> = {}): SecretLike {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'default', resourceVersion },
    data,
  };
}

export interface SecretLike {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: { name: string; namespace: string; resourceVersion: string; uid?: string };
  data: Record<string, string>;
}

export function secretList(resourceVersion: string, items: SecretLike[]): unknown {
  return { apiVersion: 'v1', kind: 'SecretList', metadata: { resourceVersion }, items };
}

/**
 * One scripted server for a test file: started before its tests, closed after them, its
 * request log cleared before each; `script` answers (a test swaps what it calls).
 */
export function useScriptedServer(script: Script): {
  readonly server: ScriptedServer;
  readonly client: KubeClient;
} {
  let server: ScriptedServer | undefined;
  let client: KubeClient | undefined;
  before(async () => {
    server = await ScriptedServer.start(script);
    client = server.client();
  });
  after(() => server?.close());
  beforeEach(() => {
    if (server) server.requests.length = 0;
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the scripted server is not started (use it inside a test)');
    return value;
  };
  return {
    get server() {
      return started(server);
    },
    get client() {
      return started(client);
    },
  };
}
