// Forwards one request to the Harvester apiserver and streams the answer back as it comes:
// a watch's events reach the client one by one, never buffered. Open watches are tracked so
// a test can cut them all at once (a dropped connection in the middle of a wait).
import type http from 'node:http';
import https from 'node:https';

/** Hop-by-hop headers (RFC 9110 §7.6.1) never cross a proxy. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const listed = String(headers.connection ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** A request that streams until the server ends it: ?watch=1|true, or the legacy /watch/ paths. */
export function isWatchRequest(url: URL): boolean {
  const watch = url.searchParams.get('watch');
  return watch === '1' || watch === 'true' || /^\/apis?\/(?:[^/]+\/)*watch\//.test(url.pathname);
}

export interface Upstream {
  /** https://127.0.0.1:<port> of the apiserver */
  origin: URL;
  /** Carries the CA and, when the proxy acts as itself, its client certificate. */
  agent: https.Agent;
}

export interface ForwardOptions {
  /** Path and query to ask the upstream for. */
  target: string;
  watch: boolean;
  /** Last changes to the request headers (authentication, impersonation). */
  rewriteHeaders?: (headers: http.OutgoingHttpHeaders) => void;
  /** The upstream could not be reached and nothing was sent to the client yet. */
  onUnreachable: (err: Error) => void;
}

export class WatchRegistry {
  private readonly open = new Set<() => void>();

  track(cut: () => void): () => void {
    this.open.add(cut);
    return () => this.open.delete(cut);
  }

  get size(): number {
    return this.open.size;
  }

  /** Cuts every open watch; returns how many there were. */
  dropAll(): number {
    const cuts = [...this.open];
    this.open.clear();
    for (const cut of cuts) cut();
    return cuts.length;
  }
}

export function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  upstream: Upstream,
  watches: WatchRegistry,
  opts: ForwardOptions,
): void {
  const headers = endToEnd(req.headers);
  delete headers.host;
  opts.rewriteHeaders?.(headers);
  const outgoing = https.request({
    protocol: upstream.origin.protocol,
    hostname: upstream.origin.hostname,
    port: upstream.origin.port,
    method: req.method,
    path: opts.target,
    headers: { ...headers, host: upstream.origin.host },
    agent: upstream.agent,
  });
  const cut = (): void => {
    outgoing.destroy();
    res.destroy();
  };
  const untrack = opts.watch ? watches.track(cut) : () => false;

  outgoing.on('response', (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
    // Headers go out now: a watch client waits for them before any event exists.
    res.flushHeaders();
    answer.pipe(res);
    answer.on('error', () => res.destroy());
    answer.on('aborted', () => res.destroy());
  });
  outgoing.on('error', (err) => {
    untrack();
    if (res.headersSent) res.destroy();
    else opts.onUnreachable(err);
  });
  // The client went away (or stopped its watch): stop asking the apiserver.
  res.on('close', () => {
    untrack();
    if (!res.writableFinished) outgoing.destroy();
  });
  req.pipe(outgoing);
}
