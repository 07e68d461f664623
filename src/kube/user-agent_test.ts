// Each program names itself in the User-Agent of every request, against a local server: what
// an apiserver's audit log or a proxy counts requests by (the chaos run's per-component rates).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { KubeClient } from './client.js';
import { Resources } from './resources.js';
import { setUserAgentProgram, userAgent } from './user-agent.js';

const agents: Array<string | undefined> = [];
const server = http.createServer((req, res) => {
  agents.push(req.headers['user-agent']);
  req.resume();
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(
    JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default' } }),
  );
});
after(() => {
  setUserAgentProgram('harvester-machine');
  server.close();
});

async function agentOfOneRequest(): Promise<string | undefined> {
  if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = KubeClient.fromKubeconfig(
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "${url}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {token: user-agent-test-token-0123456789}}]',
      'contexts: [{name: c, context: {cluster: c, user: u}}]',
      'current-context: c',
    ].join('\n'),
  );
  try {
    await client.get(Resources.secret, { namespace: 'default', name: 's' });
  } finally {
    client.close();
  }
  return agents.pop();
}

describe('User-Agent', () => {
  it('is harvester-machine until the entry point names its program, then that name', async () => {
    assert.equal(await agentOfOneRequest(), 'harvester-machine');
    setUserAgentProgram('harvester-machine-controller');
    assert.equal(userAgent(), 'harvester-machine-controller');
    assert.equal(await agentOfOneRequest(), 'harvester-machine-controller');
  });

  it('refuses a name that is not one word of letters, digits, . _ -', () => {
    for (const bad of ['', 'two words', 'a/b', '-lead', 'x\r\nInjected: 1'])
      assert.throws(() => setUserAgentProgram(bad), /is not a program name/);
    assert.equal(userAgent(), 'harvester-machine-controller', 'unchanged by a refused name');
  });
});
