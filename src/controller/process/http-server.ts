// /metrics, /healthz and /readyz on one small HTTP server (loopback unless told otherwise).
import http from 'node:http';

export interface HealthSource {
  /** The process can make progress (the loops are not dead). */
  healthy(): boolean;
  /** Ready to serve: caches synced while leading, or standing by. */
  ready(): boolean;
  metrics(): string | Promise<string>;
  /** The exposition format's content type (default: Prometheus text 0.0.4). */
  metricsContentType?: string;
}

export function parseBindAddress(text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`"${text}" is not host:port`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port: Number(m[3]) };
}

export async function startHttpServer(
  bind: string,
  source: HealthSource,
): Promise<{ port: number; close: () => Promise<void> }> {
  const { host, port } = parseBindAddress(bind);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (code: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(code, { 'Content-Type': type });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
    if (path === '/metrics') {
      Promise.resolve()
        .then(() => source.metrics())
        .then(
          (text) => send(200, text, source.metricsContentType ?? 'text/plain; version=0.0.4; charset=utf-8'),
          (err: unknown) =>
            send(500, `cannot collect metrics: ${err instanceof Error ? err.message : String(err)}\n`),
        );
      return;
    }
    if (path === '/healthz' || path === '/livez')
      return source.healthy() ? send(200, 'ok\n') : send(500, 'unhealthy\n');
    if (path === '/readyz') return source.ready() ? send(200, 'ok\n') : send(503, 'not ready\n');
    send(404, 'not found\n');
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
