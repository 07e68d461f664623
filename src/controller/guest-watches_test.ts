// The guests' PV watches when a guest cannot be reached: reported, retried with backoff, and
// no watch opened (nothing but the list attempts reaches the guest).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../kube/client.js';
import { silentLogger } from '../log/logger.js';
import { GUEST_KUBECONFIG_KEY } from '../rancher/names.js';
import { KubeconfigClients } from './harvester-access.js';
import { GuestWatches, type GuestWatchState } from './guest-watches.js';

const TOKEN = 'opaque-guest-admin-token-for-the-watch-test';
const kubeconfig = [
  'apiVersion: v1',
  'kind: Config',
  // Nothing listens on port 1 of loopback: every request is refused at once.
  'clusters: [{name: g, cluster: {server: "https://127.0.0.1:1"}}]',
  `users: [{name: u, user: {token: ${TOKEN}}}]`,
  'contexts: [{name: g, context: {cluster: g, user: u}}]',
  'current-context: g',
].join('\n');

function world(secret: 'present' | 'absent' | 'not-a-kubeconfig') {
  const requests: string[] = [];
  const states: Array<{ state: GuestWatchState; detail: string }> = [];
  const rancher = {
    find: () =>
      Promise.resolve(
        secret === 'absent'
          ? undefined
          : {
              metadata: { name: 'g1-kubeconfig', namespace: 'fleet', resourceVersion: '1' },
              data: {
                [GUEST_KUBECONFIG_KEY]: Buffer.from(
                  secret === 'present' ? kubeconfig : 'just: [text',
                ).toString('base64'),
              },
            },
      ),
  } as unknown as KubeClient;
  const watches = new GuestWatches({
    rancher,
    clients: new KubeconfigClients({
      requestTimeoutMs: 1_000,
      onRequest: (method, path) => requests.push(`${method} ${path}`),
    }),
    logger: silentLogger,
    onChange: () => assert.fail('no PV was ever listed'),
    onState: (_c, state, detail) => states.push({ state, detail }),
    backoff: { initialMs: 40, maxMs: 160 },
  });
  return { watches, requests, states };
}

const G1 = { namespace: 'fleet', name: 'g1' };

describe('GuestWatches', () => {
  it('reports an unreachable guest and retries with backoff, never opening a watch', async () => {
    const w = world('present');
    w.watches.ensure(G1);
    await new Promise((r) => setTimeout(r, 1_200));
    const status = w.watches.status();
    await w.watches.stopAll();
    assert.equal(status[0]?.state, 'unreachable');
    assert.match(status[0]?.detail ?? '', /retrying in \d+ s$/);
    assert.ok(!status[0]?.detail.includes(TOKEN));
    assert.ok(w.requests.length > 1, 'retried');
    // 40, 80, 160, 160 … ms apart (each attempt retried once by the client): a handful, not a storm.
    assert.ok(w.requests.length <= 24, `${w.requests.length} requests in 1.2 s`);
    assert.ok(
      w.requests.every((r) => r.startsWith('GET /api/v1/persistentvolumes') && !r.includes('watch=')),
      w.requests.join('\n'),
    );
    assert.equal(w.states.filter((s) => s.state === 'unreachable').length >= 1, true);
    const after = w.requests.length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(w.requests.length, after, 'stopped: nothing more');
  });

  it('says when the kubeconfig Secret is missing or holds no usable kubeconfig, and sends nothing', async () => {
    for (const [secret, state] of [
      ['absent', 'no-kubeconfig'],
      ['not-a-kubeconfig', 'unusable'],
    ] as const) {
      const w = world(secret);
      w.watches.ensure(G1);
      await new Promise((r) => setTimeout(r, 200));
      const status = w.watches.status();
      await w.watches.stopAll();
      assert.equal(status[0]?.state, state);
      assert.deepEqual(w.requests, []);
    }
  });
});
