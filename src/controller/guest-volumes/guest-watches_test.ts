// The guests' PV watches when a guest cannot be reached: reported, retried with backoff, and
// no watch opened (nothing but the list attempts reaches the guest).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../kube/client.js';
import { silentLogger } from '../../log/logger.js';
import { GUEST_KUBECONFIG_KEY } from '../../rancher/names.js';
import { KubeconfigClients } from '../../harvester-access/clients.js';
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
  const reads = { secret: 0, names: [] as string[] };
  const rancher = {
    find: (_type: unknown, at: { namespace: string; name: string }) =>
      Promise.resolve(++reads.secret + reads.names.push(`${at.namespace}/${at.name}`)).then(() =>
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
  return { watches, requests, states, reads };
}

const settle = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const G1 = { namespace: 'fleet', name: 'g1' };

describe('GuestWatches', () => {
  it('reports an unreachable guest and retries with backoff, never opening a watch', async () => {
    const w = world('present');
    w.watches.ensure(G1);
    await new Promise((r) => setTimeout(r, 1_200));
    const status = w.watches.status();
    await w.watches.stopAll();
    assert.equal(status[0]?.state, 'unreachable');
    assert.match(status[0]?.detail ?? '', /ECONNREFUSED/);
    assert.ok((status[0]?.failures ?? 0) > 1, 'the status counts the attempts');
    assert.ok(!status[0]?.detail.includes(TOKEN));
    assert.ok(w.requests.length > 1, 'retried');
    // 40, 80, 160, 160 … ms apart (each attempt retried once by the client): a handful, not a storm.
    assert.ok(w.requests.length <= 24, `${w.requests.length} requests in 1.2 s`);
    assert.ok(
      w.requests.every((r) => r.startsWith('GET /api/v1/persistentvolumes') && !r.includes('watch=')),
      w.requests.join('\n'),
    );
    // One notice (an Event, a status write) for the state, not one per retry.
    assert.deepEqual(
      w.states.map((s) => s.state),
      ['unreachable'],
    );
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

  it('sends nothing for a cluster whose Secret Rancher has not named, and reads it once Rancher does', async () => {
    const w = world('absent');
    w.watches.ensure(G1, 'not-yet');
    w.watches.ensure(G1, 'not-yet');
    await settle(300);
    assert.equal(w.reads.secret, 0, 'the Secret is not read');
    assert.equal(w.watches.status()[0]?.state, 'waiting');
    assert.match(w.watches.status()[0]?.detail ?? '', /status\.clientSecretName is empty/);
    w.watches.ensure(G1, 'written');
    await settle(20);
    assert.ok(w.reads.secret >= 1, 'read once Rancher names it');
    // The status only says whether to read: the Secret read is always the cluster's own.
    assert.deepEqual([...new Set(w.reads.names)], ['fleet/g1-kubeconfig']);
    await w.watches.stopAll();
    assert.deepEqual(
      w.states.map((s) => s.state),
      ['waiting', 'no-kubeconfig'],
    );
  });

  it('reads a missing Secret again on the next event of the cluster, not on a timer; polls one Rancher says it wrote', async () => {
    const w = world('absent');
    w.watches.ensure(G1);
    await settle(400); // ten times the first pause of the backoff
    assert.equal(w.reads.secret, 1, 'no timer');
    w.watches.ensure(G1);
    await settle(50);
    assert.equal(w.reads.secret, 2, 'read again on the next event');
    await w.watches.stopAll();

    const named = world('absent');
    named.watches.ensure(G1, 'written');
    await settle(400);
    await named.watches.stopAll();
    assert.ok(
      named.reads.secret > 2,
      `a Secret Rancher says exists is looked for again (${named.reads.secret} reads)`,
    );
    assert.equal(named.states.length, 1, 'one notice');
  });
});
