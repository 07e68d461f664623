// What a cluster's DNS and kube-proxy do for kube-apiserver's calls to a webhook Service, on
// 127.0.0.1: kube-apiserver calls a webhook that names a Service at https://<name>.<namespace>.svc:<port>
// and sends that call through the HTTPS proxy its environment names (Go's ProxyFromEnvironment,
// observed with kube-apiserver v1.33). The sandbox gives its Harvester kube-apiserver this proxy:
// it opens a tunnel (HTTP CONNECT) for each Service address it was told about, to the port on
// 127.0.0.1 the Service's "pod" listens on, as kube-proxy maps a Service port to a target port;
// every other address is refused. So a webhook registers itself exactly as on a cluster (Service,
// port 443) and no one rewrites its configuration.
import http from 'node:http';
import net from 'node:net';

export interface ServiceProxy {
  /** http://127.0.0.1:<port>: the value of kube-apiserver's HTTPS_PROXY. */
  readonly url: string;
  /** Sends tunnels to `<service>.<namespace>.svc:<port>` to 127.0.0.1:<targetPort>. */
  route(service: { namespace: string; name: string; port: number }, targetPort: number): void;
  /** The tunnels opened so far, by Service address (tests). */
  readonly opened: ReadonlyMap<string, number>;
  stop(): Promise<void>;
}

/** The address kube-apiserver asks the proxy for: `<name>.<namespace>.svc:<port>`. */
export function serviceAddress(service: { namespace: string; name: string; port: number }): string {
  return `${service.name}.${service.namespace}.svc:${service.port}`;
}

/** The target of a CONNECT, lower-cased as DNS names compare; undefined when it is not host:port. Pure. */
export function connectTarget(requestUrl: string | undefined): string | undefined {
  if (!requestUrl || requestUrl.length > 300) return undefined;
  return /^[a-z0-9.-]+:\d{1,5}$/i.test(requestUrl) ? requestUrl.toLowerCase() : undefined;
}

export async function startServiceProxy(): Promise<ServiceProxy> {
  const routes = new Map<string, number>();
  const opened = new Map<string, number>();
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket): net.Socket => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
    return s;
  };
  const server = http.createServer((_req, res) => {
    res.writeHead(405, { 'Content-Type': 'text/plain' }).end('only CONNECT to a Service address\n');
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    track(client);
    const target = connectTarget(req.url);
    const port = target !== undefined ? routes.get(target) : undefined;
    if (target === undefined || port === undefined) {
      client.end(`HTTP/1.1 502 Bad Gateway\r\n\r\nno Service ${req.url ?? ''} in the sandbox\r\n`);
      return;
    }
    const upstream = track(net.connect(port, '127.0.0.1'));
    upstream.once('connect', () => {
      opened.set(target, (opened.get(target) ?? 0) + 1);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.once('error', () => {
      if (!client.destroyed)
        client.end('HTTP/1.1 502 Bad Gateway\r\n\r\nthe Service has no process listening\r\n');
    });
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    route(service, targetPort) {
      routes.set(serviceAddress(service).toLowerCase(), targetPort);
    },
    opened,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The environment of a kube-apiserver that calls webhook Services through `proxy`: only the
 * HTTPS proxy (webhooks are called over TLS); loopback, where etcd and every other server of the
 * sandbox listen, goes direct. Whatever proxy the caller's environment names is left out.
 */
export function apiserverProxyEnvironment(
  base: NodeJS.ProcessEnv,
  proxy: ServiceProxy | undefined,
): NodeJS.ProcessEnv {
  if (!proxy) return base;
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base)) if (!/^(https?|no|all)_proxy$/i.test(k)) env[k] = v;
  env.HTTPS_PROXY = proxy.url;
  env.NO_PROXY = '127.0.0.1,localhost,::1';
  return env;
}
