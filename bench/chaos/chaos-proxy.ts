// A fault-injecting HTTPS proxy on loopback in front of one apiserver (Rancher's, or the
// sandbox's front proxy that plays Harvester and Rancher's /k8s/clusters path). Every client of
// the chaos run that should feel the faults is pointed at it; it forwards with the caller's own
// bearer token (sandbox/proxy/forward.ts streams watches), and:
// - counts requests per User-Agent per wall-clock second (each program names itself in its
//   User-Agent: src/kube/user-agent.ts), so the run can say how hard any component pushed;
// - answers 429 with Retry-After to everything during a storm;
// - cuts every open watch on demand;
// - stalls: a freezable TCP layer in front (test/support/tcp-proxy.ts) passes nothing in
//   either direction and holds new connections, as a load balancer that stops answering.
import https from 'node:https';
import type http from 'node:http';
import type net from 'node:net';
import type { ControlPlane } from '../../sandbox/control-plane/control-plane.js';
import { issueCert } from '../../sandbox/control-plane/pki.js';
import { faultStatus } from '../../sandbox/proxy/faults.js';
import { forward, isWatchRequest, WatchRegistry, type Upstream } from '../../sandbox/proxy/forward.js';
import { writeApiserverStatus } from '../../sandbox/proxy/status.js';
import { startFreezableProxy, type FreezableProxy } from '../../test/support/tcp-proxy.js';

export interface ComponentRate {
  component: string;
  total: number;
  /** The most requests this component sent within one wall-clock second. */
  peakPerSecond: number;
  /** When that second began (ms since the epoch). */
  peakAt: number;
}

/** Requests per component (the first word of its User-Agent) per wall-clock second, over all proxies. */
export class RequestMeter {
  private readonly perSecond = new Map<string, Map<number, number>>();

  record(userAgent: string | undefined, now = Date.now()): void {
    const component = (userAgent ?? '').split(/[\s/]/)[0] || '(none)';
    const seconds = this.perSecond.get(component) ?? new Map<number, number>();
    const second = Math.floor(now / 1000);
    seconds.set(second, (seconds.get(second) ?? 0) + 1);
    this.perSecond.set(component, seconds);
  }

  rates(): ComponentRate[] {
    return [...this.perSecond].map(([component, seconds]) => {
      let total = 0;
      let peak = { n: 0, at: 0 };
      for (const [second, n] of seconds) {
        total += n;
        if (n > peak.n) peak = { n, at: second * 1000 };
      }
      return { component, total, peakPerSecond: peak.n, peakAt: peak.at };
    });
  }
}

export interface ChaosProxy {
  /** https://127.0.0.1:<port>: the freezable front door. */
  readonly url: string;
  /** Every request is answered 429 (Retry-After: retryAfterSeconds) until `untilMs`. */
  storm(untilMs: number, retryAfterSeconds: number): void;
  /** Cuts every open watch stream; returns how many were cut. */
  cutWatches(): number;
  freeze(): void;
  thaw(): void;
  /** Requests answered 429 by storms so far. */
  readonly stormAnswers: number;
  stop(): Promise<void>;
}

export async function startChaosProxy(opts: {
  name: string;
  /** Issues the serving certificate: its CA is what the clients' kubeconfigs already trust. */
  issuer: ControlPlane;
  upstream: { origin: string; caPem: string };
  meter: RequestMeter;
}): Promise<ChaosProxy> {
  const serving = await issueCert(
    opts.issuer.pki,
    `chaos-proxy-${opts.name}-${process.pid}`,
    { commonName: `chaos-proxy-${opts.name}` },
    'server',
  );
  const upstream: Upstream = {
    origin: new URL(opts.upstream.origin),
    agent: new https.Agent({ keepAlive: true, ca: opts.upstream.caPem }),
  };
  const watches = new WatchRegistry();
  let stormUntil = 0;
  let stormRetryAfter = 1;
  let stormAnswers = 0;

  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    opts.meter.record(req.headers['user-agent']);
    if (Date.now() < stormUntil) {
      stormAnswers++;
      req.resume();
      writeApiserverStatus(
        res,
        faultStatus({ pathPattern: /./, status: 429, times: 1, retryAfterSeconds: stormRetryAfter }),
        { 'Retry-After': String(stormRetryAfter) },
      );
      return;
    }
    const url = new URL(req.url ?? '/', 'https://chaos-proxy.invalid');
    forward(req, res, upstream, watches, {
      target: req.url ?? '/',
      watch: isWatchRequest(url),
      // The upstream is down (an apiserver restart): the client's connection breaks as it would.
      onUnreachable: () => res.socket?.destroy(),
    });
  };

  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem }, onRequest);
  const sockets = new Set<net.Socket>();
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const inner = (server.address() as net.AddressInfo).port;
  const door: FreezableProxy = await startFreezableProxy({ host: '127.0.0.1', port: inner });

  return {
    url: `https://127.0.0.1:${door.port}`,
    storm(untilMs, retryAfterSeconds) {
      stormUntil = untilMs;
      stormRetryAfter = retryAfterSeconds;
    },
    cutWatches: () => watches.dropAll(),
    freeze: () => door.freeze(),
    thaw: () => door.thaw(),
    get stormAnswers() {
      return stormAnswers;
    },
    async stop() {
      door.thaw();
      watches.dropAll();
      await door.close();
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
      upstream.agent.destroy();
    },
  };
}
