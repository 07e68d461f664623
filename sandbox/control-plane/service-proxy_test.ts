// The service proxy tunnels only the Service addresses it was given, to their 127.0.0.1 ports,
// and kube-apiserver's environment names it and nothing else.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  apiserverProxyEnvironment,
  connectTarget,
  startServiceProxy,
  type ServiceProxy,
} from './service-proxy.js';

function connect(
  proxyUrl: string,
  target: string,
): Promise<{ status: number; socket: net.Socket; head: Buffer }> {
  const { port } = new URL(proxyUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: Number(port), method: 'CONNECT', path: target });
    req.once('connect', (res, socket, head) => resolve({ status: res.statusCode ?? 0, socket, head }));
    req.once('error', reject);
    req.end();
  });
}

describe('service proxy', () => {
  let proxy: ServiceProxy;
  let pod: net.Server;
  before(async () => {
    proxy = await startServiceProxy();
    pod = net.createServer((s) => s.end('hello from the pod'));
    await new Promise<void>((r) => pod.listen(0, '127.0.0.1', r));
    proxy.route(
      { namespace: 'harvester-system', name: 'harvester-webhook', port: 443 },
      (pod.address() as net.AddressInfo).port,
    );
  });
  after(async () => {
    await proxy.stop();
    pod.close();
  });

  it("tunnels a routed Service's address to its port on 127.0.0.1 and counts it", async () => {
    const { status, socket, head } = await connect(proxy.url, 'harvester-webhook.harvester-system.svc:443');
    assert.equal(status, 200);
    const text = await new Promise<string>((resolve) => {
      let got = head.toString();
      socket.on('data', (d: Buffer) => (got += d.toString()));
      socket.on('end', () => resolve(got));
    });
    assert.equal(text, 'hello from the pod');
    assert.equal(proxy.opened.get('harvester-webhook.harvester-system.svc:443'), 1);
  });

  it('refuses any other address: another port, another Service, a host outside the sandbox', async () => {
    for (const target of [
      'harvester-webhook.harvester-system.svc:9443',
      'other.default.svc:443',
      'example.com:443',
    ]) {
      const { status, socket } = await connect(proxy.url, target);
      socket.destroy();
      assert.equal(status, 502, target);
    }
  });

  it('reads a CONNECT target as host:port only', () => {
    assert.equal(
      connectTarget('Harvester-Webhook.harvester-system.svc:443'),
      'harvester-webhook.harvester-system.svc:443',
    );
    for (const bad of [undefined, '', '/path', 'http://x:1', 'a:b', `${'a'.repeat(400)}:1`])
      assert.equal(connectTarget(bad), undefined);
  });

  it("kube-apiserver's environment names this proxy for HTTPS only, and drops the caller's proxies", () => {
    const env = apiserverProxyEnvironment(
      {
        PATH: '/bin',
        HTTP_PROXY: 'http://elsewhere:1',
        https_proxy: 'http://elsewhere:2',
        no_proxy: '*',
        ALL_PROXY: 'x',
      },
      proxy,
    );
    assert.deepEqual(env, { PATH: '/bin', HTTPS_PROXY: proxy.url, NO_PROXY: '127.0.0.1,localhost,::1' });
    const untouched = { PATH: '/bin', HTTPS_PROXY: 'http://elsewhere:1' };
    assert.equal(apiserverProxyEnvironment(untouched, undefined), untouched);
  });
});
