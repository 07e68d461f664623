// The sandbox's front proxy: one HTTPS endpoint on 127.0.0.1 standing where a client of
// Harvester would find the Harvester apiserver, and where a client of Rancher would find
// Rancher's /k8s/clusters/<clusterId> proxy. What cannot run here is played by it:
// - /k8s/clusters/<clusterId>/...: Rancher's token check and impersonating proxy;
// - anything else: forwarded to the Harvester apiserver with the caller's own credential,
//   watches streamed. KubeVirt's subresources (/apis/subresources.kubevirt.io/...) are among
//   them: the apiserver's aggregation layer hands them to KubeVirt's own virt-api.
// Its serving certificate is issued by the Harvester control plane's CA, so a kubeconfig
// for the proxy carries the same CA as one for the apiserver.
import crypto from 'node:crypto';
import type http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { KubeClient } from '../../src/kube/client.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import type { ControlPlane } from '../control-plane/control-plane.js';
import { buildKubeconfig } from '../control-plane/kubeconfig.js';
import { issueCert, type IssuedCert } from '../control-plane/pki.js';
import { Faults, type FaultControl } from './faults.js';
import { forward, isWatchRequest, WatchRegistry, type Upstream } from './forward.js';
import type { Identity } from './identity.js';
import {
  checkClusterAccess,
  impersonationHeaders,
  rancherIdentity,
  writeNormanError,
} from './rancher-gate.js';
import { internalError, writeApiserverStatus } from './status.js';

export interface FrontProxyOptions {
  harvester: ControlPlane;
  rancher: ControlPlane;
  /** The Harvester cluster's id in Rancher, e.g. "c-m-sandbox". */
  clusterId: string;
  logger?: Logger;
}

export interface FrontProxy {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** The CA that verifies the proxy (the Harvester control plane's CA). */
  readonly caPem: string;
  readonly faults: FaultControl;
  stop(): Promise<void>;
}

/** A client acting as the proxy itself (system:masters), like virt-api's and Rancher's own credentials. */
function proxyClient(cp: ControlPlane, cert: IssuedCert): KubeClient {
  return KubeClient.fromKubeconfig(
    buildKubeconfig({
      name: `front-proxy-${cp.name}`,
      server: cp.server,
      caPem: cp.caPem,
      user: { clientCertPem: cert.certPem, clientKeyPem: cert.keyPem },
    }),
    { requestTimeoutMs: 10_000, retry: { attempts: 3, baseDelayMs: 100, maxDelayMs: 1_000 } },
  );
}

/** The certificates the proxy serves with and acts with, issued by each control plane's CA. */
interface ProxyCerts {
  serving: IssuedCert;
  harvester: IssuedCert;
  rancher: IssuedCert;
}

async function issueProxyCerts(harvester: ControlPlane, rancher: ControlPlane): Promise<ProxyCerts> {
  const suffix = crypto.randomBytes(4).toString('hex');
  const identity = { commonName: 'sandbox-front-proxy', organization: 'system:masters' };
  const serving = await issueCert(
    harvester.pki,
    `front-proxy-${suffix}`,
    { commonName: 'sandbox-front-proxy' },
    'server',
  );
  const harvesterCert = await issueCert(harvester.pki, `front-proxy-client-${suffix}`, identity, 'client');
  const rancherCert = await issueCert(rancher.pki, `front-proxy-client-${suffix}`, identity, 'client');
  return { serving, harvester: harvesterCert, rancher: rancherCert };
}

/** What the proxy talks to and keeps while it runs. */
interface ProxyRoutes {
  rancherAdmin: KubeClient;
  /** The Harvester apiserver with the caller's own credential. */
  direct: Upstream;
  /** The Harvester apiserver as the proxy, impersonating the Rancher user. */
  impersonating: Upstream;
  watches: WatchRegistry;
  clusterId: string;
}

/**
 * The path a /k8s/clusters/<id>/... request asks of the downstream apiserver: what follows the
 * cluster prefix of the raw request URL, always starting with a slash.
 */
function downstreamTarget(rawRequestUrl: string, rawClusterId: string): string {
  const rawTarget = rawRequestUrl.slice(`/k8s/clusters/${rawClusterId}`.length) || '/';
  return rawTarget.startsWith('/') ? rawTarget : `/${rawTarget}`;
}

/** Replaces the caller's credential and any impersonation it asked for with the Rancher user's. */
function impersonateRancherUser(headers: http.OutgoingHttpHeaders, who: Identity): void {
  for (const name of Object.keys(headers)) {
    if (name === 'authorization' || name.startsWith('impersonate-')) delete headers[name];
  }
  Object.assign(headers, impersonationHeaders(who));
}

/** Rancher's /k8s/clusters/<clusterId> proxy: token check, access check, impersonating forward. */
async function forwardViaRancher(
  routes: ProxyRoutes,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
): Promise<void> {
  const [rawClusterId = ''] = url.pathname.slice('/k8s/clusters/'.length).split('/');
  const clusterId = decodeURIComponent(rawClusterId);
  const who = await rancherIdentity(routes.rancherAdmin, req.headers.authorization, clusterId);
  const refused = await checkClusterAccess(routes.rancherAdmin, who, clusterId);
  if (refused) {
    req.resume();
    return writeNormanError(res, refused);
  }
  if (clusterId !== routes.clusterId) {
    // A cluster Rancher knows but the sandbox has no downstream for.
    req.resume();
    return writeNormanError(res, {
      code: 'ClusterUnavailable',
      status: 503,
      message: 'cluster not provisioned',
    });
  }
  forward(req, res, routes.impersonating, routes.watches, {
    target: downstreamTarget(req.url ?? '/', rawClusterId),
    watch: isWatchRequest(url),
    rewriteHeaders: (headers) => impersonateRancherUser(headers, who),
    // Rancher's proxy error responder: 500 with the error's text.
    onUnreachable: (err) => {
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(err.message);
    },
  });
}

/** Anything else: straight to the Harvester apiserver with the caller's own credential. */
function forwardDirectly(
  routes: ProxyRoutes,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
): Promise<void> {
  forward(req, res, routes.direct, routes.watches, {
    target: req.url ?? '/',
    watch: isWatchRequest(url),
    // The apiserver is down: the client's connection breaks as if it had been talking to it.
    onUnreachable: () => res.socket?.destroy(),
  });
  return Promise.resolve();
}

/** The proxy's request handler: faults first, then Rancher's proxy or the Harvester apiserver. */
function handleRequests(
  routes: ProxyRoutes,
  faults: Faults,
  logger: Logger,
): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'https://front-proxy.invalid');
    faults.record(req.method ?? 'GET', url.pathname, isWatchRequest(url));
    if (faults.answer(req, res, url.pathname)) return;
    const handled = url.pathname.startsWith('/k8s/clusters/')
      ? forwardViaRancher(routes, req, res, url)
      : forwardDirectly(routes, req, res, url);
    handled.catch((err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      logger.warn('front proxy request failed', { method: req.method, path: url.pathname, error: message });
      if (res.headersSent) res.destroy();
      else writeApiserverStatus(res, internalError(message));
    });
  };
}

/** Listens on a free loopback port; keeps the open sockets so stopping can cut them. */
async function listenOnLoopback(server: https.Server): Promise<{ port: number; sockets: Set<net.Socket> }> {
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return { port: (server.address() as net.AddressInfo).port, sockets };
}

/** Starts the front proxy for the Harvester control plane and Rancher's cluster proxy in front of it. */
export async function startFrontProxy(opts: FrontProxyOptions): Promise<FrontProxy> {
  const logger = (opts.logger ?? silentLogger).child({ component: 'front-proxy' });
  const certs = await issueProxyCerts(opts.harvester, opts.rancher);
  const harvesterAdmin = proxyClient(opts.harvester, certs.harvester);
  const rancherAdmin = proxyClient(opts.rancher, certs.rancher);
  const origin = new URL(opts.harvester.server);
  const routes: ProxyRoutes = {
    rancherAdmin,
    // The caller's own credential only: no client certificate, or a request without a token
    // would reach the apiserver as the proxy instead of as system:anonymous.
    direct: { origin, agent: new https.Agent({ keepAlive: true, ca: opts.harvester.caPem }) },
    impersonating: {
      origin,
      agent: new https.Agent({
        keepAlive: true,
        ca: opts.harvester.caPem,
        cert: certs.harvester.certPem,
        key: certs.harvester.keyPem,
      }),
    },
    watches: new WatchRegistry(),
    clusterId: opts.clusterId,
  };
  const faults = new Faults(() => routes.watches.dropAll());
  const server = https.createServer(
    { cert: certs.serving.certPem, key: certs.serving.keyPem },
    handleRequests(routes, faults, logger),
  );
  const { port, sockets } = await listenOnLoopback(server);
  const url = `https://127.0.0.1:${port}`;
  logger.info('front proxy listening', { url, harvester: opts.harvester.server, clusterId: opts.clusterId });

  let stopped: Promise<void> | undefined;
  return {
    url,
    caPem: opts.harvester.caPem,
    faults,
    stop: () =>
      (stopped ??= (async () => {
        routes.watches.dropAll();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await closed;
        routes.direct.agent.destroy();
        routes.impersonating.agent.destroy();
        harvesterAdmin.close();
        rancherAdmin.close();
      })()),
  };
}
