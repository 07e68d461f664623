// Two guards of the client, against a scripted local server: a verb on one object never goes
// out without the object's name (it would address the whole collection), and a refused
// credential is retried only when it follows an outage (an apiserver still starting answers
// 401/403 until its caches are filled), otherwise it is final at once.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { KubeClient } from './client.js';
import { isCredentialRejected, isKubeError, KubeError } from './errors.js';
import { Resources, type KubeObject } from './resources.js';

const answers: number[] = [];
const seen: string[] = [];
const server = http.createServer((req, res) => {
  seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
  req.resume();
  const code = answers.shift() ?? 200;
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(
    JSON.stringify(
      code === 200
        ? { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default' } }
        : { kind: 'Status', code, message: code === 401 ? 'Unauthorized' : 'failed' },
    ),
  );
});
let client: KubeClient;

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = KubeClient.fromKubeconfig(
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "' + url + '", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {token: guard-test-token-0123456789}}]',
      'contexts: [{name: c, context: {cluster: c, user: u}}]',
      'current-context: c',
    ].join('\n'),
    { retry: { attempts: 5, baseDelayMs: 1, maxDelayMs: 2 } },
  );
});
after(() => {
  client.close();
  server.close();
});
beforeEach(() => {
  answers.length = 0;
  seen.length = 0;
});

describe('KubeClient guards', () => {
  it('refuses get, find, update, patch and delete without a name, sending nothing', async () => {
    const at = { namespace: 'default', name: '' };
    const refusals = [
      client.get(Resources.virtualMachine, at),
      client.find(Resources.virtualMachine, at),
      client.update(Resources.virtualMachine, { metadata: { namespace: 'default', name: '' } }),
      client.patch(Resources.virtualMachine, at, { metadata: {} }),
      client.delete(Resources.virtualMachine, at),
    ];
    for (const refusal of refusals) {
      await assert.rejects(refusal, (err: unknown) => {
        assert.ok(isKubeError(err, 'BadRequest'), String(err));
        assert.match(
          err.message,
          /virtualmachines\.kubevirt\.io default: no object name given \(refusing to address the whole collection\)$/,
        );
        return true;
      });
    }
    assert.deepEqual(seen, []);
  });

  it('a 401 with no outage before it is final at once', async () => {
    answers.push(401);
    await assert.rejects(
      client.get(Resources.secret, { namespace: 'default', name: 's' }),
      (err: unknown) => {
        return isCredentialRejected(err);
      },
    );
    assert.equal(seen.length, 1);
  });

  it('a 401 or 403 right after the server failed is tried again (a server still starting)', async () => {
    answers.push(503, 401, 403);
    const got = await client.get<KubeObject>(Resources.secret, { namespace: 'default', name: 's' });
    assert.equal(got.metadata.name, 's');
    assert.equal(seen.length, 4);
    assert.ok(client.isTransient(new KubeError('CredentialRejected', 'op', 'op: refused')));
  });
});
