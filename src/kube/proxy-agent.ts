// The one keep-alive agent of a client that goes through a proxy. For an https server every
// connection is a tunnel (HTTP CONNECT, or SOCKS5) with the apiserver's TLS inside it; the
// agent pools those tunnels like direct sockets, so a client opens one tunnel per concurrent
// request, not one per request. Written here rather than taken from https-proxy-agent (which
// hands a refused CONNECT back as if the apiserver had answered 403 or 407) or hpagent (which
// writes an IPv6 target without brackets and keeps only the status code): a refusal must be
// an error that names the proxy, never an answer from Kubernetes.
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type tls from 'node:tls';
import { SocksClient } from 'socks';
import { describeProxy, type ProxyChoice } from './proxy-environment.js';
import { registerSecret } from '../log/redact.js';

/** A proxy that failed us: unreachable, refusing, or not answering. */
export class ProxyError extends Error {
  override readonly name = 'ProxyError';
  constructor(
    message: string,
    readonly code: 'HM_PROXY_UNREACHABLE' | 'HM_PROXY_REFUSED' | 'HM_PROXY_TIMEOUT',
    /** The CONNECT answer's status, when the proxy answered. */
    readonly statusCode?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isProxyError(err: unknown): err is ProxyError {
  return err instanceof ProxyError;
}

/** Registers the proxy's user and password with the redactor; returns the Proxy-Authorization value. */
export function proxyAuthorization(url: URL): string | undefined {
  if (!url.username && !url.password) return undefined;
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  const pair = `${user}:${password}`;
  const header = `Basic ${Buffer.from(pair).toString('base64')}`;
  registerSecret(url.href);
  registerSecret(pair);
  registerSecret(password);
  registerSecret(header);
  return header;
}

const TUNNEL_TIMEOUT_MS = 30_000;

function refusal(status: number, statusText: string): string {
  const answer = `${status}${statusText ? ` ${statusText}` : ''}`;
  if (status === 407) {
    return `the proxy asks for credentials (${answer}): give user:password in the proxy URL, or check them`;
  }
  if (status === 403)
    return `the proxy refused the tunnel (${answer}): its access rules do not allow this server`;
  if (status >= 500) return `the proxy could not reach the server (${answer})`;
  return `the proxy refused the tunnel (${answer})`;
}

function authority(host: string, port: number | string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

export interface TunnelOptions {
  proxy: ProxyChoice;
  /** TLS towards an https:// proxy: Go verifies it with the kubeconfig's CA (system roots without one). */
  proxyTls: tls.ConnectionOptions;
}

/** Opens a CONNECT tunnel to host:port through an http:// or https:// proxy. */
export function openConnectTunnel(options: TunnelOptions, host: string, port: number): Promise<net.Socket> {
  const { url } = options.proxy;
  const target = authority(host, port);
  const auth = proxyAuthorization(url);
  const secure = url.protocol === 'https:';
  const proxyName = describeProxy(url);
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request({
      ...(secure ? options.proxyTls : {}),
      ...(secure ? { servername: url.hostname.replace(/^\[|\]$/g, '') } : {}),
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || (secure ? 443 : 80),
      method: 'CONNECT',
      path: target,
      setHost: false,
      agent: false,
      headers: { Host: target, ...(auth ? { 'Proxy-Authorization': auth } : {}) },
    });
    const timer = setTimeout(() => {
      request.destroy(
        new ProxyError(
          `no answer from proxy ${proxyName} within ${TUNNEL_TIMEOUT_MS} ms`,
          'HM_PROXY_TIMEOUT',
        ),
      );
    }, TUNNEL_TIMEOUT_MS);
    request.once('connect', (response, socket, head) => {
      clearTimeout(timer);
      const status = response.statusCode ?? 0;
      if (status !== 200) {
        socket.destroy();
        reject(new ProxyError(refusal(status, response.statusMessage ?? ''), 'HM_PROXY_REFUSED', status));
        return;
      }
      // Bytes the proxy sent after its answer belong to the tunnel.
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    request.once('response', (response) => {
      // An answer to CONNECT that is not a CONNECT answer (a proxy that does not tunnel).
      clearTimeout(timer);
      response.resume();
      reject(
        new ProxyError(
          refusal(response.statusCode ?? 0, response.statusMessage ?? ''),
          'HM_PROXY_REFUSED',
          response.statusCode,
        ),
      );
    });
    request.once('error', (err) => {
      clearTimeout(timer);
      reject(
        err instanceof ProxyError
          ? err
          : new ProxyError(`cannot connect to the proxy: ${err.message}`, 'HM_PROXY_UNREACHABLE', undefined, {
              cause: err,
            }),
      );
    });
    request.end();
  });
}

/** Opens a SOCKS5 tunnel; like Go, the proxy resolves the server's name. */
export async function openSocksTunnel(proxy: ProxyChoice, host: string, port: number): Promise<net.Socket> {
  const { url } = proxy;
  proxyAuthorization(url);
  try {
    const { socket } = await SocksClient.createConnection({
      command: 'connect',
      destination: { host: host.replace(/^\[|\]$/g, ''), port },
      proxy: {
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: Number(url.port || 1080),
        type: 5,
        ...(url.username ? { userId: decodeURIComponent(url.username) } : {}),
        ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      },
      timeout: TUNNEL_TIMEOUT_MS,
    });
    return socket;
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const refused =
      /Authentication|rejected|not allowed|Failed/i.test(reason) && !/ECONNREFUSED/.test(reason);
    throw new ProxyError(
      refused ? `the SOCKS5 proxy refused: ${reason}` : `cannot connect to the proxy: ${reason}`,
      refused ? 'HM_PROXY_REFUSED' : 'HM_PROXY_UNREACHABLE',
      undefined,
      { cause: err },
    );
  }
}

type OpenTunnel = (host: string, port: number) => Promise<net.Socket>;
type CreateCallback = (err: Error | null, socket: net.Socket) => void;
type ConnectOptions = { host?: string | null; hostname?: string | null; port?: number | string | null };

function targetOf(options: ConnectOptions): { host: string; port: number } {
  return { host: String(options.hostname ?? options.host ?? 'localhost'), port: Number(options.port) };
}

/** An https agent whose connections are TLS inside a tunnel (CONNECT or SOCKS5). */
export class HttpsTunnelAgent extends https.Agent {
  constructor(
    options: https.AgentOptions,
    private readonly open: OpenTunnel,
  ) {
    super(options);
  }

  override createConnection(options: ConnectOptions, callback?: CreateCallback): net.Socket {
    const { host, port } = targetOf(options);
    this.open(host, port).then(
      (socket) => {
        // The base class adds what pooling needs (TLS session reuse) around tls.connect.
        const secure = super.createConnection({ ...options, socket } as never) as net.Socket;
        callback?.(null, secure);
      },
      (err: Error) => callback?.(err, undefined as never),
    );
    return undefined as never;
  }
}

/** An http agent whose connections are SOCKS5 tunnels (http:// servers through a SOCKS proxy). */
export class HttpTunnelAgent extends http.Agent {
  constructor(
    options: http.AgentOptions,
    private readonly open: OpenTunnel,
  ) {
    super(options);
  }

  override createConnection(options: ConnectOptions, callback?: CreateCallback): net.Socket {
    const { host, port } = targetOf(options);
    this.open(host, port).then(
      (socket) => callback?.(null, socket),
      (err: Error) => callback?.(err, undefined as never),
    );
    return undefined as never;
  }
}
