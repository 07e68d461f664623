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

export async function startFrontProxy(opts: FrontProxyOptions): Promise<FrontProxy> {
  const logger = (opts.logger ?? silentLogger).child({ component: 'front-proxy' });
  const suffix = crypto.randomBytes(4).toString('hex');
  const identity = { commonName: 'sandbox-front-proxy', organization: 'system:masters' };
  const serving = await issueCert(
    opts.harvester.pki,
    `front-proxy-${suffix}`,
    { commonName: 'sandbox-front-proxy' },
    'server',
  );
  const harvesterCert = await issueCert(
    opts.harvester.pki,
    `front-proxy-client-${suffix}`,
    identity,
    'client',
  );
  const rancherCert = await issueCert(opts.rancher.pki, `front-proxy-client-${suffix}`, identity, 'client');
  const harvesterAdmin = proxyClient(opts.harvester, harvesterCert);
  const rancherAdmin = proxyClient(opts.rancher, rancherCert);
  const origin = new URL(opts.harvester.server);
  // The caller's own credential only: no client certificate, or a request without a token
  // would reach the apiserver as the proxy instead of as system:anonymous.
  const direct: Upstream = { origin, agent: new https.Agent({ keepAlive: true, ca: opts.harvester.caPem }) };
  const impersonating: Upstream = {
    origin,
    agent: new https.Agent({
      keepAlive: true,
      ca: opts.harvester.caPem,
      cert: harvesterCert.certPem,
      key: harvesterCert.keyPem,
    }),
  };
  const watches = new WatchRegistry();
  const faults = new Faults(() => watches.dropAll());

  const viaRancher = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
    const [rawClusterId = ''] = url.pathname.slice('/k8s/clusters/'.length).split('/');
    const clusterId = decodeURIComponent(rawClusterId);
    const who = await rancherIdentity(rancherAdmin, req.headers.authorization, clusterId);
    const refused = await checkClusterAccess(rancherAdmin, who, clusterId);
    if (refused) {
      req.resume();
      return writeNormanError(res, refused);
    }
    if (clusterId !== opts.clusterId) {
      // A cluster Rancher knows but the sandbox has no downstream for.
      req.resume();
      return writeNormanError(res, {
        code: 'ClusterUnavailable',
        status: 503,
        message: 'cluster not provisioned',
      });
    }
    const rawTarget = (req.url ?? '/').slice(`/k8s/clusters/${rawClusterId}`.length) || '/';
    forward(req, res, impersonating, watches, {
      target: rawTarget.startsWith('/') ? rawTarget : `/${rawTarget}`,
      watch: isWatchRequest(url),
      rewriteHeaders: (headers) => {
        for (const name of Object.keys(headers)) {
          if (name === 'authorization' || name.startsWith('impersonate-')) delete headers[name];
        }
        Object.assign(headers, impersonationHeaders(who));
      },
      // Rancher's proxy error responder: 500 with the error's text.
      onUnreachable: (err) => {
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end(err.message);
      },
    });
  };

  const directly = (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
    forward(req, res, direct, watches, {
      target: req.url ?? '/',
      watch: isWatchRequest(url),
      // The apiserver is down: the client's connection breaks as if it had been talking to it.
      onUnreachable: () => res.socket?.destroy(),
    });
    return Promise.resolve();
  };

  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'https://front-proxy.invalid');
    faults.record(req.method ?? 'GET', url.pathname, isWatchRequest(url));
    if (faults.answer(req, res, url.pathname)) return;
    const handled = url.pathname.startsWith('/k8s/clusters/')
      ? viaRancher(req, res, url)
      : directly(req, res, url);
    handled.catch((err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      logger.warn('front proxy request failed', { method: req.method, path: url.pathname, error: message });
      if (res.headersSent) res.destroy();
      else writeApiserverStatus(res, internalError(message));
    });
  };

  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem }, onRequest);
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;
  logger.info('front proxy listening', { url, harvester: opts.harvester.server, clusterId: opts.clusterId });

  let stopped: Promise<void> | undefined;
  return {
    url,
    caPem: opts.harvester.caPem,
    faults,
    stop: () =>
      (stopped ??= (async () => {
        watches.dropAll();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await closed;
        direct.agent.destroy();
        impersonating.agent.destroy();
        harvesterAdmin.close();
        rancherAdmin.close();
      })()),
  };
}
