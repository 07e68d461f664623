// HTTP(S) to one apiserver: TLS and auth from the kubeconfig (via @kubernetes/client-node),
// one keep-alive agent per client (client-node 1.x makes an agent per request), direct or
// through the proxy client-go would take (route.ts), a deadline on every request, and every
// failure turned into a classified KubeError.
import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  KubeError,
  admissionDenialOf,
  classifyStatus,
  isNetworkError,
  parseStatusBody,
  type CredentialDescription,
} from './errors.js';
import { createAgent, routeFor, type Route } from './route.js';
import { describeProxy } from './proxy-environment.js';
import { isProxyError } from './proxy-agent.js';
import { TokenFile, tokenFileOf } from './token-file.js';
import { userAgent } from './user-agent.js';

export interface HttpRequest {
  method: string;
  /** Path and query, e.g. /api/v1/namespaces/default/pods?limit=1 */
  path: string;
  body?: string;
  contentType?: string;
  accept?: string;
  /**
   * Ask for a gzipped answer (`send` does, as client-go does unless compression is disabled):
   * kube-apiserver compresses answers of 128 KiB and more, and Rancher's proxy passes them on
   * (docs/upstream/control-plane.md#response-compression). Watches do not: they stream.
   */
  acceptGzip?: boolean;
  /** Named in errors: "get virtualmachines.kubevirt.io default/vm1". */
  operation: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface HttpResponse {
  statusCode: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** The default cap on one answer (a list page, a watch event), counted as unpacked. */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface TransportOptions {
  /** Where HTTP_PROXY, HTTPS_PROXY and NO_PROXY are read (default: process.env). */
  environment?: Readonly<Record<string, string | undefined>>;
  /**
   * Ask for gzipped answers (default true, as client-go's transport does). Off for a client of
   * an apiserver on the same network, as Kubernetes' own control-plane components run: there
   * gzip costs both sides CPU and saves nothing.
   */
  compression?: boolean;
  /**
   * The most bytes one answer may hold once unpacked (default 64 MiB): a list page, a whole
   * answer, and each watch event. Lower for a server someone else runs (a guest cluster's
   * apiserver): more is an error of this client's request, not of anyone else's.
   */
  maxResponseBytes?: number;
}

/** "64 MiB", "4 MiB", "1.5 KiB": a byte count as the errors name it. */
export function describeBytes(n: number): string {
  if (n >= 1_048_576) return `${+(n / 1_048_576).toFixed(1)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

export class Transport {
  readonly server: URL;
  /** Direct, or which proxy, decided once: one server per client. */
  readonly route: Route;
  private agent: http.Agent | undefined;
  private tls: https.RequestOptions | undefined;
  private readonly tokenFile: TokenFile | undefined;
  private readonly compression: boolean;
  /** TransportOptions.maxResponseBytes. */
  readonly maxResponseBytes: number;

  constructor(
    private readonly kubeConfig: KubeConfig,
    readonly credential: CredentialDescription,
    options: TransportOptions = {},
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
    this.route = routeFor(this.server, cluster.proxyUrl, options.environment ?? process.env);
    const tokenPath = tokenFileOf(kubeConfig.getCurrentUser());
    this.tokenFile = tokenPath ? new TokenFile(tokenPath) : undefined;
    this.compression = options.compression ?? true;
    this.maxResponseBytes = options.maxResponseBytes ?? MAX_BODY_BYTES;
  }

  /** "https://host:6443", or "https://host:6443 through proxy http://proxy:3128 (from HTTPS_PROXY)". */
  private get destination(): string {
    if (this.route.kind === 'direct') return this.server.origin;
    return `${this.server.origin} through proxy ${describeProxy(this.route.proxy.url)} (from ${this.route.proxy.source})`;
  }

  private get isHttps(): boolean {
    return this.server.protocol === 'https:';
  }

  /** Request options with TLS material and fresh auth headers (exec plugins and token files can rotate). */
  private async requestOptions(req: Pick<HttpRequest, 'method' | 'path'>): Promise<https.RequestOptions> {
    const applied: https.RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(applied);
    const headers = { ...(applied.headers as Record<string, string> | undefined) };
    // A token file is read again whenever it changed (a projected service-account token rotates).
    if (this.tokenFile) headers['Authorization'] = `Bearer ${await this.tokenFile.read()}`;
    if (!this.tls) {
      this.tls = {
        ca: applied.ca,
        cert: applied.cert,
        key: applied.key,
        rejectUnauthorized: applied.rejectUnauthorized,
        servername: applied.servername,
      };
      this.agent = createAgent(this.route, this.server, this.tls as https.AgentOptions);
    }
    const basePath = this.server.pathname.replace(/\/$/, '');
    const path = basePath + req.path;
    const common = { method: req.method, agent: this.agent, auth: applied.auth };
    if (this.route.kind === 'forward') {
      // An http:// server through an http(s) proxy: Go sends the whole URL to the proxy.
      const proxy = this.route.proxy.url;
      return {
        ...common,
        protocol: proxy.protocol,
        hostname: unbracket(proxy.hostname),
        port: proxy.port,
        path: this.server.origin + path,
        headers: {
          ...headers,
          Host: this.server.host,
          ...(this.route.authorization ? { 'Proxy-Authorization': this.route.authorization } : {}),
        },
      };
    }
    return {
      ...this.tls,
      ...common,
      protocol: this.server.protocol,
      hostname: unbracket(this.server.hostname),
      port: this.server.port,
      path,
      headers,
    };
  }

  /** Opens a request and resolves with the response stream (for watches) once headers arrive. */
  async open(req: HttpRequest): Promise<{ response: http.IncomingMessage; abort: () => void }> {
    // One deadline from here: getting the credential (an exec plugin, a token file on a
    // stalled mount) counts against it as much as the request does.
    const started = Date.now();
    let options: https.RequestOptions;
    try {
      options = await withinDeadline(this.requestOptions(req), req.timeoutMs, req.signal);
    } catch (err) {
      if (err instanceof CredentialDeadline) {
        throw new KubeError(
          'Timeout',
          req.operation,
          `${req.operation}: no credential for ${this.server.origin} within ${req.timeoutMs} ms (the kubeconfig's exec plugin or token file did not answer); nothing was sent`,
          { credential: this.credential },
        );
      }
      // An exec plugin that failed, a token file gone: no request was sent.
      const reason = err instanceof Error ? err.message : String(err);
      throw new KubeError(
        'Unknown',
        req.operation,
        `${req.operation}: cannot get the credential for ${this.server.origin}: ${reason}`,
        {
          cause: err,
          credential: this.credential,
        },
      );
    }
    options.headers = {
      ...options.headers,
      // client-go's default (its content type, then anything): an aggregated server may answer
      // without JSON, as virt-api's start/stop/restart do (202, no body: 406 to a JSON-only Accept).
      Accept: req.accept ?? 'application/json, */*',
      'User-Agent': userAgent(),
      ...(req.acceptGzip ? { 'Accept-Encoding': 'gzip' } : {}),
      ...(req.body !== undefined
        ? {
            'Content-Type': req.contentType ?? 'application/json',
            'Content-Length': Buffer.byteLength(req.body),
          }
        : {}),
    };
    return new Promise((resolve, reject) => {
      const lib = (this.route.kind === 'forward' ? this.route.proxy.url.protocol === 'https:' : this.isHttps)
        ? https
        : http;
      let settled = false;
      const outgoing = lib.request(options, (response) => {
        settled = true;
        clearTimeout(timer);
        resolve({ response, abort: () => outgoing.destroy() });
      });
      const fail = (err: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(this.transportError(req, err));
      };
      const timer = setTimeout(
        () => {
          fail(Object.assign(new Error('deadline'), { code: 'HM_DEADLINE' }));
          outgoing.destroy();
        },
        Math.max(1, req.timeoutMs - (Date.now() - started)),
      );
      outgoing.on('error', fail);
      outgoing.on('socket', (socket) => socket.setKeepAlive(true, 10_000));
      if (req.signal) {
        if (req.signal.aborted) outgoing.destroy();
        req.signal.addEventListener('abort', () => {
          fail(Object.assign(new Error('aborted'), { code: 'HM_ABORTED' }));
          outgoing.destroy();
        });
      }
      outgoing.end(req.body);
    });
  }

  /** One request, the whole body read within the deadline; non-2xx becomes a KubeError. */
  async send(req: HttpRequest): Promise<HttpResponse> {
    const started = Date.now();
    const { response, abort } = await this.open({ acceptGzip: this.compression, ...req });
    const remaining = Math.max(1, req.timeoutMs - (Date.now() - started));
    // A gzipped answer is read through gunzip; the size limit counts what it unpacks to.
    const gzipped = /^\s*gzip\s*$/i.test(String(response.headers['content-encoding'] ?? ''));
    const stream: NodeJS.ReadableStream = gzipped ? response.pipe(zlib.createGunzip()) : response;
    const body = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const timer = setTimeout(() => {
        abort();
        reject(this.transportError(req, Object.assign(new Error('deadline'), { code: 'HM_DEADLINE' })));
      }, remaining);
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > this.maxResponseBytes) {
          clearTimeout(timer);
          abort();
          reject(
            new KubeError(
              'Unknown',
              req.operation,
              `${req.operation}: response larger than ${describeBytes(this.maxResponseBytes)}${gzipped ? ' (unpacked)' : ''} from ${this.server.origin}`,
              { tooLarge: true },
            ),
          );
          return;
        }
        chunks.push(chunk);
      });
      stream.on('end', () => {
        clearTimeout(timer);
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
      const failed = (err: Error): void => {
        clearTimeout(timer);
        abort();
        reject(this.transportError(req, err));
      };
      response.on('error', failed);
      if (gzipped) stream.on('error', failed);
    });
    const statusCode = response.statusCode ?? 0;
    if (statusCode < 200 || statusCode >= 300) {
      throw this.statusError(req.operation, statusCode, body, response.headers);
    }
    return { statusCode, headers: response.headers, body };
  }

  statusError(
    operation: string,
    statusCode: number,
    body: string,
    headers: http.IncomingHttpHeaders,
  ): KubeError {
    const status = parseStatusBody(body);
    const kind = classifyStatus(statusCode, status);
    const retryAfterMs = retryAfter(headers, status);
    const message = status?.message || `HTTP ${statusCode}`;
    const denial = admissionDenialOf(status);
    return new KubeError(
      kind,
      operation,
      `${operation}: ${message} (HTTP ${statusCode} from ${this.server.origin})`,
      {
        statusCode,
        reason: status?.reason,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        ...(kind === 'CredentialRejected' ? { credential: this.credential } : {}),
        ...(denial ? { denial } : {}),
      },
    );
  }

  private transportError(req: HttpRequest, err: unknown): KubeError {
    const code = (err as { code?: string }).code;
    if (code === 'HM_DEADLINE') {
      return new KubeError(
        'Timeout',
        req.operation,
        `${req.operation}: no answer from ${this.destination} within ${req.timeoutMs} ms`,
      );
    }
    if (code === 'HM_ABORTED') {
      return new KubeError('Unknown', req.operation, `${req.operation}: cancelled`, { cause: err });
    }
    const reason = err instanceof Error ? err.message : String(err);
    const proxy = this.route.kind === 'direct' ? undefined : describeProxy(this.route.proxy.url);
    if (isProxyError(err)) {
      return new KubeError(
        'Unreachable',
        req.operation,
        `${req.operation}: cannot reach ${this.destination}: ${reason}`,
        {
          cause: err,
          ...(proxy ? { proxy } : {}),
          ...(err.statusCode !== undefined ? { proxyStatusCode: err.statusCode } : {}),
        },
      );
    }
    const kind = isNetworkError(err) ? 'Unreachable' : tlsProblem(code) ? 'Unreachable' : 'Unknown';
    const hint = tlsProblem(code)
      ? ' (TLS verification failed: check certificate-authority-data in the kubeconfig)'
      : '';
    return new KubeError(
      kind,
      req.operation,
      `${req.operation}: cannot reach ${this.destination}: ${reason}${hint}`,
      {
        cause: err,
        ...(proxy ? { proxy } : {}),
      },
    );
  }

  close(): void {
    this.agent?.destroy();
  }
}

class CredentialDeadline extends Error {}

/** `work`, or a rejection once `ms` have passed or `signal` aborted (the work itself goes on, unobserved). */
function withinDeadline<T>(work: Promise<T>, ms: number, signal: AbortSignal | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new CredentialDeadline('deadline')), ms);
    const onAbort = (): void => reject(Object.assign(new Error('cancelled'), { code: 'HM_ABORTED' }));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    void work.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
  });
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function tlsProblem(code: string | undefined): boolean {
  return (
    code === 'DEPTH_ZERO_SELF_SIGNED_CERT' ||
    code === 'SELF_SIGNED_CERT_IN_CHAIN' ||
    code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' ||
    code === 'ERR_TLS_CERT_ALTNAME_INVALID' ||
    code === 'CERT_HAS_EXPIRED'
  );
}

function retryAfter(
  headers: http.IncomingHttpHeaders,
  status: { details?: { retryAfterSeconds?: number } } | undefined,
): number | undefined {
  const header = headers['retry-after'];
  if (typeof header === 'string') {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(header);
    if (!Number.isNaN(date)) return Math.max(0, date - Date.now());
  }
  const fromStatus = status?.details?.retryAfterSeconds;
  return typeof fromStatus === 'number' ? fromStatus * 1000 : undefined;
}
