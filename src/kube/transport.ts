// HTTP(S) to one apiserver: TLS and auth from the kubeconfig (via @kubernetes/client-node),
// one keep-alive agent per client (client-node 1.x makes an agent per request), a deadline
// on every request, and every failure turned into a classified KubeError.
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  KubeError,
  classifyStatus,
  isNetworkError,
  parseStatusBody,
  type CredentialDescription,
} from './errors.js';

export interface HttpRequest {
  method: string;
  /** Path and query, e.g. /api/v1/namespaces/default/pods?limit=1 */
  path: string;
  body?: string;
  contentType?: string;
  accept?: string;
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

const MAX_BODY_BYTES = 64 * 1024 * 1024;

export class Transport {
  readonly server: URL;
  private agent: http.Agent | undefined;
  private tls: https.RequestOptions | undefined;

  constructor(
    private readonly kubeConfig: KubeConfig,
    readonly credential: CredentialDescription,
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
  }

  private get isHttps(): boolean {
    return this.server.protocol === 'https:';
  }

  /** Request options with TLS material and fresh auth headers (exec plugins and token files can rotate). */
  private async requestOptions(req: Pick<HttpRequest, 'method' | 'path'>): Promise<https.RequestOptions> {
    const applied: https.RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(applied);
    if (!this.tls) {
      this.tls = {
        ca: applied.ca,
        cert: applied.cert,
        key: applied.key,
        rejectUnauthorized: applied.rejectUnauthorized,
        servername: applied.servername,
      };
      const agentOptions: https.AgentOptions = {
        keepAlive: true,
        maxSockets: 32,
        keepAliveMsecs: 15_000,
        ...(this.tls as https.AgentOptions),
      };
      this.agent = this.isHttps ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    }
    const basePath = this.server.pathname.replace(/\/$/, '');
    return {
      ...this.tls,
      protocol: this.server.protocol,
      hostname: this.server.hostname,
      port: this.server.port,
      method: req.method,
      path: basePath + req.path,
      agent: this.agent,
      auth: applied.auth,
      headers: { ...(applied.headers as Record<string, string> | undefined) },
    };
  }

  /** Opens a request and resolves with the response stream (for watches) once headers arrive. */
  async open(req: HttpRequest): Promise<{ response: http.IncomingMessage; abort: () => void }> {
    const options = await this.requestOptions(req);
    options.headers = {
      ...options.headers,
      Accept: req.accept ?? 'application/json',
      'User-Agent': 'harvester-machine',
      ...(req.body !== undefined
        ? {
            'Content-Type': req.contentType ?? 'application/json',
            'Content-Length': Buffer.byteLength(req.body),
          }
        : {}),
    };
    return new Promise((resolve, reject) => {
      const lib = this.isHttps ? https : http;
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
      const timer = setTimeout(() => {
        fail(Object.assign(new Error('deadline'), { code: 'HM_DEADLINE' }));
        outgoing.destroy();
      }, req.timeoutMs);
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
    const { response, abort } = await this.open(req);
    const remaining = Math.max(1, req.timeoutMs - (Date.now() - started));
    const body = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const timer = setTimeout(() => {
        abort();
        reject(this.transportError(req, Object.assign(new Error('deadline'), { code: 'HM_DEADLINE' })));
      }, remaining);
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BODY_BYTES) {
          clearTimeout(timer);
          abort();
          reject(new KubeError('Unknown', req.operation, `${req.operation}: response larger than 64 MiB`));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => {
        clearTimeout(timer);
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
      response.on('error', (err) => {
        clearTimeout(timer);
        reject(this.transportError(req, err));
      });
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
    return new KubeError(
      kind,
      operation,
      `${operation}: ${message} (HTTP ${statusCode} from ${this.server.origin})`,
      {
        statusCode,
        reason: status?.reason,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        ...(kind === 'CredentialRejected' ? { credential: this.credential } : {}),
      },
    );
  }

  private transportError(req: HttpRequest, err: unknown): KubeError {
    const code = (err as { code?: string }).code;
    if (code === 'HM_DEADLINE') {
      return new KubeError(
        'Timeout',
        req.operation,
        `${req.operation}: no answer from ${this.server.origin} within ${req.timeoutMs} ms`,
      );
    }
    if (code === 'HM_ABORTED') {
      return new KubeError('Unknown', req.operation, `${req.operation}: cancelled`, { cause: err });
    }
    const reason = err instanceof Error ? err.message : String(err);
    const kind = isNetworkError(err) ? 'Unreachable' : tlsProblem(code) ? 'Unreachable' : 'Unknown';
    const hint = tlsProblem(code)
      ? ' (TLS verification failed: check certificate-authority-data in the kubeconfig)'
      : '';
    return new KubeError(
      kind,
      req.operation,
      `${req.operation}: cannot reach ${this.server.origin}: ${reason}${hint}`,
      {
        cause: err,
      },
    );
  }

  close(): void {
    this.agent?.destroy();
  }
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
