// How a client reaches its apiserver, decided once per client (it talks to one server):
// direct, a CONNECT or SOCKS5 tunnel for an https server, or for an http:// server the
// whole URL sent to an http(s) proxy, as Go's http.Transport does. And the one agent for it.
import http from 'node:http';
import https from 'node:https';
import type tls from 'node:tls';
import {
  HttpTunnelAgent,
  HttpsTunnelAgent,
  openConnectTunnel,
  openSocksTunnel,
  proxyAuthorization,
} from './proxy-agent.js';
import { chooseProxy, type ProxyChoice } from './proxy-environment.js';

export type Route =
  | { kind: 'direct' }
  /** https server through an http:// or https:// proxy: a CONNECT tunnel per connection. */
  | { kind: 'connect'; proxy: ProxyChoice }
  /** Any server through a socks5:// proxy. */
  | { kind: 'socks'; proxy: ProxyChoice }
  /** http server through an http:// or https:// proxy: absolute URLs to the proxy. */
  | { kind: 'forward'; proxy: ProxyChoice; authorization?: string };

export function routeFor(
  server: URL,
  kubeconfigProxyUrl: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): Route {
  const proxy = chooseProxy(server, kubeconfigProxyUrl, env);
  if (!proxy) return { kind: 'direct' };
  // Registers the proxy's credentials with the redactor now, before any request can fail.
  const authorization = proxyAuthorization(proxy.url);
  if (proxy.url.protocol === 'socks5:' || proxy.url.protocol === 'socks5h:') return { kind: 'socks', proxy };
  if (server.protocol === 'https:') return { kind: 'connect', proxy };
  return { kind: 'forward', proxy, ...(authorization ? { authorization } : {}) };
}

const POOL: http.AgentOptions = { keepAlive: true, maxSockets: 32, keepAliveMsecs: 15_000 };

/**
 * The client's one agent. `serverTls` is the kubeconfig's TLS (CA, client certificate,
 * tls-server-name, insecure-skip-tls-verify); Go verifies an https:// proxy with the same CA
 * and the same insecure setting, so that is what a tunnel's first TLS hop uses too.
 */
export function createAgent(route: Route, server: URL, serverTls: https.AgentOptions): http.Agent {
  const secure = server.protocol === 'https:';
  const proxyTls: tls.ConnectionOptions = {
    ...(serverTls.ca !== undefined ? { ca: serverTls.ca } : {}),
    ...(serverTls.rejectUnauthorized !== undefined
      ? { rejectUnauthorized: serverTls.rejectUnauthorized }
      : {}),
  };
  switch (route.kind) {
    case 'direct':
      return secure ? new https.Agent({ ...POOL, ...serverTls }) : new http.Agent(POOL);
    case 'connect':
      return new HttpsTunnelAgent({ ...POOL, ...serverTls }, (host, port) =>
        openConnectTunnel({ proxy: route.proxy, proxyTls }, host, port),
      );
    case 'socks':
      return secure
        ? new HttpsTunnelAgent({ ...POOL, ...serverTls }, (host, port) =>
            openSocksTunnel(route.proxy, host, port),
          )
        : new HttpTunnelAgent(POOL, (host, port) => openSocksTunnel(route.proxy, host, port));
    case 'forward':
      return route.proxy.url.protocol === 'https:'
        ? new https.Agent({ ...POOL, ...proxyTls })
        : new http.Agent(POOL);
  }
}
