// Proxies as client-go uses them, against real ones on loopback: squid (CONNECT, basic auth,
// an https:// listener, its own hosts file) and microsocks (SOCKS5), in front of a real
// kube-apiserver. The environment's proxies are tried with names that are not loopback
// (squid resolves them), since Go never sends localhost or loopback through them.
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { KubeClient } from '../src/kube/client.js';
import { KubeError } from '../src/kube/errors.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { redact } from '../src/log/redact.js';
import { freePort } from '../sandbox/control-plane/ports.js';
import { issueCert } from '../sandbox/control-plane/pki.js';
import { useControlPlane } from './support/control-plane-fixture.js';
import { eventually } from './support/eventually.js';
import { CliRunner, kubeconfigFile, tempDir } from './cli-harness.js';
import { addHostsEntry, startMicrosocks, startSquid, type Squid } from './support/proxies.js';

const NAME = 'kube.hm-proxy.test';
const ONE_TRY = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
const PROXY_PASSWORD = 'pr0xy-s3cret-pw';

const fixture = useControlPlane({ name: 'proxy', crds: false, controllerManager: false });

/** The admin kubeconfig with its cluster changed (server, tls-server-name, proxy-url). */
function variant(changes: { server?: string; tlsServerName?: string; proxyUrl?: string }): string {
  const doc = parse(fixture.cp.adminKubeconfig) as { clusters: Array<{ cluster: Record<string, unknown> }> };
  const cluster = doc.clusters[0]?.cluster ?? {};
  if (changes.server) cluster['server'] = changes.server;
  if (changes.tlsServerName) cluster['tls-server-name'] = changes.tlsServerName;
  if (changes.proxyUrl) cluster['proxy-url'] = changes.proxyUrl;
  return stringify(doc);
}

function port(): string {
  return new URL(fixture.cp.server).port;
}

/** A name only squid can resolve; the apiserver's certificate is checked for localhost. */
function byName(name = NAME): string {
  return variant({ server: `https://${name}:${port()}`, tlsServerName: 'localhost' });
}

async function listWith(kubeconfig: string, environment: Record<string, string>): Promise<void> {
  // The operator's own kubeconfig: its proxy-url is honoured (a cloud credential's is refused).
  const client = KubeClient.fromKubeconfig(kubeconfig, {
    trust: 'operator',
    environment,
    retry: ONE_TRY,
    requestTimeoutMs: 15_000,
  });
  try {
    await client.list(Resources.namespace, { limit: 1 });
  } finally {
    client.close();
  }
}

async function failureWith(kubeconfig: string, environment: Record<string, string> = {}): Promise<KubeError> {
  const err = await listWith(kubeconfig, environment).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof KubeError, `expected a KubeError, got ${String(err)}`);
  return err;
}

const tunnelsTo = (squid: Squid, target: string): number =>
  squid.accessLog().filter((e) => e.method === 'CONNECT' && e.url === target).length;

describe('proxies from the environment (HTTPS_PROXY, NO_PROXY)', () => {
  let squid: Squid;
  before(async () => {
    squid = await startSquid({ hosts: { [NAME]: '127.0.0.1', 'direct.hm-proxy.test': '127.0.0.1' } });
  });
  after(() => squid?.stop());

  it('tunnels to a non-loopback name through HTTPS_PROXY, one tunnel for a client’s requests', async () => {
    const client = KubeClient.fromKubeconfig(byName(), {
      trust: 'operator',
      environment: { HTTPS_PROXY: squid.url },
      retry: ONE_TRY,
    });
    for (let n = 0; n < 3; n++) await client.list(Resources.namespace, { limit: 1 });
    client.close();
    // squid logs a tunnel when it closes.
    const entry = await squid.waitForEntry(`CONNECT ${NAME}:${port()}`, (e) => e.url === `${NAME}:${port()}`);
    assert.equal(entry.result, 'TCP_TUNNEL/200');
    assert.equal(tunnelsTo(squid, `${NAME}:${port()}`), 1, 'three requests, one kept-alive tunnel');
  });

  it('takes https_proxy when HTTPS_PROXY is unset, and HTTPS_PROXY over it when both are set', async () => {
    const before = tunnelsTo(squid, `${NAME}:${port()}`);
    await listWith(byName(), { https_proxy: squid.url });
    // The lower-case one points nowhere: were it used, the request would fail.
    await listWith(byName(), { HTTPS_PROXY: squid.url, https_proxy: `http://127.0.0.1:${await freePort()}` });
    await eventually('two more tunnels logged', () =>
      Promise.resolve(tunnelsTo(squid, `${NAME}:${port()}`) === before + 2),
    );
  });

  it('never sends 127.0.0.1 or localhost through the environment’s proxy', async () => {
    const dead = { HTTPS_PROXY: `http://127.0.0.1:${await freePort()}` };
    await listWith(variant({}), dead);
    await listWith(variant({ server: `https://localhost:${port()}` }), dead);
  });

  it('goes direct when NO_PROXY matches (host, domain with or without dot, host:port, *), else through the proxy', async (t) => {
    const hosts = addHostsEntry('direct.hm-proxy.test');
    if (!hosts) {
      t.skip('not root: cannot map direct.hm-proxy.test in /etc/hosts for the direct connection');
      return;
    }
    try {
      const target = `direct.hm-proxy.test:${port()}`;
      for (const noProxy of [
        'direct.hm-proxy.test',
        'hm-proxy.test',
        '.hm-proxy.test',
        `direct.hm-proxy.test:${port()}`,
        'x.test,*',
      ]) {
        await listWith(byName('direct.hm-proxy.test'), { HTTPS_PROXY: squid.url, NO_PROXY: noProxy });
      }
      // A NO_PROXY entry for another port does not match: this one goes through squid.
      await listWith(byName('direct.hm-proxy.test'), {
        HTTPS_PROXY: squid.url,
        NO_PROXY: 'direct.hm-proxy.test:1',
      });
      await squid.waitForEntry(`CONNECT ${target}`, (e) => e.url === target);
      assert.equal(tunnelsTo(squid, target), 1, 'only the request NO_PROXY did not match went through squid');
    } finally {
      hosts.remove();
    }
  });

  it('the built CLI takes HTTPS_PROXY from its environment and merges its $KUBECONFIG list', async () => {
    const dir = tempDir('hm-cli-proxy-');
    const cli = new CliRunner(path.join(dir, 'store'));
    const file = kubeconfigFile(dir, 'by-name', byName());
    const kubeconfigList = [path.join(dir, 'absent.kubeconfig'), file].join(path.delimiter);
    const target = `${NAME}:${port()}`;
    const before = tunnelsTo(squid, target);
    const result = await cli.run(['doctor'], { env: { HTTPS_PROXY: squid.url, KUBECONFIG: kubeconfigList } });
    const line = (check: string): string =>
      result.stdout.split('\n').find((l) => l.includes(`${check}:`)) ?? '';
    assert.match(line('reachable'), /^PASS /, result.stdout + result.stderr);
    assert.match(line('credential accepted'), /^PASS /);
    await eventually('the CLI’s tunnel is logged', () => Promise.resolve(tunnelsTo(squid, target) > before));
  });

  it('sends an http:// server’s requests to the proxy as whole URLs (no CONNECT)', async () => {
    const server = http.createServer((req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.end(
        JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [], seen: req.url }),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const plainPort = (server.address() as { port: number }).port;
    try {
      const kubeconfig = stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'plain',
            cluster: { server: `http://${NAME}:${plainPort}`, 'insecure-skip-tls-verify': true },
          },
        ],
        users: [{ name: 'plain', user: {} }],
        contexts: [{ name: 'plain', context: { cluster: 'plain', user: 'plain' } }],
        'current-context': 'plain',
      });
      await listWith(kubeconfig, {
        HTTP_PROXY: squid.url,
        HTTPS_PROXY: `http://127.0.0.1:${await freePort()}`,
      });
      const entry = await squid.waitForEntry('a GET of the whole URL', (e) => e.method === 'GET');
      assert.equal(entry.url, `http://${NAME}:${plainPort}/api/v1/namespaces?limit=1`);
    } finally {
      server.close();
    }
  });
});

describe("the kubeconfig's proxy-url", () => {
  let squid: Squid;
  before(async () => {
    const cert = await issueCert(fixture.cp.pki, 'squid', { commonName: 'localhost' }, 'server');
    squid = await startSquid({
      auth: { user: 'hmuser', password: PROXY_PASSWORD },
      deny: ['forbidden.hm-proxy.test'],
      hosts: { 'forbidden.hm-proxy.test': '127.0.0.1' },
      tls: { certPath: cert.certPath, keyPath: cert.keyPath },
    });
  });
  after(() => squid?.stop());

  const withAuth = (url: string, password = PROXY_PASSWORD): string =>
    url.replace('://', `://hmuser:${password}@`);

  it('applies to loopback too, and wins over the environment', async () => {
    const target = `127.0.0.1:${port()}`;
    await listWith(variant({ proxyUrl: withAuth(squid.url) }), {
      HTTPS_PROXY: `http://127.0.0.1:${await freePort()}`,
      NO_PROXY: '*',
    });
    const entry = await squid.waitForEntry(
      `CONNECT ${target}`,
      (e) => e.url === target && e.result === 'TCP_TUNNEL/200',
    );
    assert.equal(entry.user, 'hmuser');
  });

  it('reaches the server through an https:// proxy verified with the kubeconfig’s CA', async () => {
    assert.ok(squid.httpsUrl);
    const before = tunnelsTo(squid, `127.0.0.1:${port()}`);
    await listWith(variant({ proxyUrl: withAuth(squid.httpsUrl) }), {});
    await eventually('one more tunnel logged', () =>
      Promise.resolve(tunnelsTo(squid, `127.0.0.1:${port()}`) === before + 1),
    );
  });

  it('keeps watches working through the proxy', async () => {
    const client = KubeClient.fromKubeconfig(variant({ proxyUrl: withAuth(squid.url) }), {
      retry: ONE_TRY,
      trust: 'operator',
    });
    const tunnelsBefore = tunnelsTo(squid, `127.0.0.1:${port()}`);
    const name = `through-proxy-${Date.now()}`;
    const seen: string[] = [];
    const watch = client.watch<KubeObject>(
      Resources.configMap,
      { namespace: 'default', timeoutSeconds: 60 },
      (event) => {
        if (event.object.metadata.name) seen.push(`${event.type} ${event.object.metadata.name}`);
      },
    );
    try {
      // Whether created before or after the watch opened, it arrives (a watch without a
      // resourceVersion starts with every existing object) through the tunnel.
      await fixture.cp.admin.create<KubeObject>(Resources.configMap, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'default' },
      });
      await eventually(`the watch sees ${name}`, () => Promise.resolve(seen.includes(`ADDED ${name}`)));
    } finally {
      watch.stop();
      await watch.done.catch(() => undefined);
      client.close();
    }
    const watchPath = '/api/v1/namespaces/default/configmaps';
    assert.ok(
      squid.accessLog().every((e) => !e.url.includes(watchPath)),
      'tunnelled, not forwarded',
    );
    await eventually('the watch’s tunnel is logged', () =>
      Promise.resolve(tunnelsTo(squid, `127.0.0.1:${port()}`) === tunnelsBefore + 1),
    );
  });

  it('fails with 407 for wrong credentials: Unreachable, naming the proxy, never the password', async () => {
    const wrong = 'wr0ng-pr0xy-pw';
    const err = await failureWith(variant({ proxyUrl: withAuth(squid.url, wrong) }));
    assert.equal(err.kind, 'Unreachable');
    assert.equal(err.extra.proxyStatusCode, 407);
    assert.equal(err.extra.proxy, squid.url);
    assert.match(
      err.message,
      new RegExp(`through proxy ${squid.url.replace(/\./g, '\\.')} \\(from kubeconfig proxy-url\\)`),
    );
    assert.match(err.message, /407 Proxy Authentication Required/);
    assert.ok(!err.message.includes(wrong) && !err.message.includes('hmuser:'), err.message);
    // Without any credentials: the same refusal.
    assert.equal((await failureWith(variant({ proxyUrl: squid.url }))).extra.proxyStatusCode, 407);
    // The password is registered: a log line that quotes the proxy URL is redacted.
    assert.ok(!redact(`HTTPS_PROXY=${withAuth(squid.url, wrong)}`).includes(wrong));
  });

  it('fails with 403 when the proxy’s rules refuse the server, not as a Kubernetes Forbidden', async () => {
    const err = await failureWith(
      variant({
        server: `https://forbidden.hm-proxy.test:${port()}`,
        tlsServerName: 'localhost',
        proxyUrl: withAuth(squid.url),
      }),
    );
    assert.equal(err.kind, 'Unreachable');
    assert.equal(err.extra.proxyStatusCode, 403);
    assert.match(err.message, /the proxy refused the tunnel \(403 Forbidden\)/);
  });

  it('fails naming the proxy when it is down', async () => {
    const downUrl = `http://127.0.0.1:${await freePort()}`;
    const err = await failureWith(variant({ proxyUrl: withAuth(downUrl) }));
    assert.equal(err.kind, 'Unreachable');
    assert.match(
      err.message,
      new RegExp(
        `through proxy ${downUrl.replace(/\./g, '\\.')} .*cannot connect to the proxy: .*ECONNREFUSED`,
      ),
    );
    assert.ok(!err.message.includes(PROXY_PASSWORD));
  });

  it('reaches the server through a socks5:// proxy (microsocks), with its credentials', async () => {
    const socks = await startMicrosocks({ user: 'hmsocks', password: 'socks-pass-9' });
    try {
      await listWith(variant({ proxyUrl: socks.url }), {});
      await eventually('microsocks logged the tunnel', () =>
        Promise.resolve(socks.connections().includes(`127.0.0.1:${port()}`)),
      );
      const err = await failureWith(
        variant({ proxyUrl: socks.url.replace('socks-pass-9', 'bad-socks-pass') }),
      );
      assert.equal(err.kind, 'Unreachable');
      assert.match(err.message, new RegExp(`through proxy socks5://127\\.0\\.0\\.1:${socks.port} .*refused`));
      assert.ok(!err.message.includes('bad-socks-pass'));
    } finally {
      await socks.stop();
    }
  });
});
