import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { KubeClient } from '../../kube/client.js';
import { KubeError } from '../../kube/errors.js';
import { silentLogger } from '../../log/logger.js';
import { CREDENTIAL_KEY_CLUSTER_ID, CREDENTIAL_KEY_KUBECONFIG } from '../../rancher/cloud-credential.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../rancher/labels.js';
import type { RancherCaches } from '../common/caches.js';
import { fakeCache } from '../testing/fake-cache.js';
import type { EventRecorder } from '../common/events.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { LoadBalancerCleanup, loadBalancerMetrics } from './load-balancer-cleanup.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A deleted guest cluster whose one HarvesterMachine goes, on a credential that may not list load balancers. */
function world() {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const cluster = {
    metadata: { name: 'c1', namespace: 'fleet', deletionTimestamp: new Date(now).toISOString() },
    spec: { cloudCredentialSecretName: 'cattle-global-data:cc-1' },
  };
  const secret = {
    metadata: { name: 'cc-1', namespace: 'cattle-global-data' },
    data: { [CREDENTIAL_KEY_KUBECONFIG]: b64('k'), [CREDENTIAL_KEY_CLUSTER_ID]: b64('c-h1') },
  };
  let machines = [
    {
      metadata: { name: 'm1', namespace: 'fleet', labels: { [CAPI_LABEL_CLUSTER_NAME]: 'c1' } },
      spec: { vmNamespace: 'vms' },
    },
  ];
  const cache = fakeCache;
  let requests = 0;
  const forbidden = () => {
    requests++;
    return Promise.reject(
      new KubeError('Forbidden', 'list', 'list loadbalancers: forbidden (HTTP 403)', { statusCode: 403 }),
    );
  };
  const client = { list: forbidden, get: forbidden, find: forbidden } as unknown as KubeClient;
  const warnings: string[] = [];
  const cleanup = new LoadBalancerCleanup({
    caches: {
      capiClusters: cache(() => undefined),
      provisioningClusters: cache(() => cluster),
      harvesterMachines: cache(
        () => undefined,
        () => machines,
      ),
      credentials: cache(() => secret),
    } as unknown as RancherCaches,
    harvester: { forSecret: () => client } as unknown as HarvesterClients,
    events: {
      record: (_t: unknown, _o: unknown, type: string, _r: string, m: string) =>
        void (type === 'Warning' && warnings.push(m)),
    } as unknown as EventRecorder,
    metrics: loadBalancerMetrics(new Registry()),
    logger: silentLogger,
    deadlineMs: 30 * 60_000,
    onCredentialRejected: () => undefined,
    now: () => now,
  });
  return {
    cleanup,
    warnings,
    requests: () => requests,
    advance: (ms: number) => void (now += ms),
    machinesGone: () => void (machines = []),
  };
}

describe('LoadBalancerCleanup', () => {
  it('after a failed attempt, updates of the cluster do not start another before the backoff', async () => {
    const w = world();
    assert.equal(
      await w.cleanup.reconcile({ namespace: 'fleet', name: 'c1' }),
      undefined,
      'a machine is still there: wait',
    );
    w.machinesGone();
    const first = await w.cleanup.reconcile({ namespace: 'fleet', name: 'c1' });
    const attempted = w.requests();
    assert.ok(attempted > 0);
    assert.deepEqual(first, { requeueAfterMs: 1_000 });
    // The cluster object is updated 20 times within the next half second (Cluster API's and
    // Rancher's finalizers): each reconcile is told to come back, none sends a request.
    for (let i = 0; i < 20; i++) {
      w.advance(25);
      const again = await w.cleanup.reconcile({ namespace: 'fleet', name: 'c1' });
      assert.ok(
        again && again.requeueAfterMs !== undefined && again.requeueAfterMs > 0,
        JSON.stringify(again),
      );
    }
    assert.equal(w.requests(), attempted, 'no request before the backoff is over');
    assert.equal(w.warnings.length, 1, 'one Warning Event per attempt');
    w.advance(600);
    assert.deepEqual(
      await w.cleanup.reconcile({ namespace: 'fleet', name: 'c1' }),
      { requeueAfterMs: 2_000 },
      'then it tries again, backing off',
    );
    assert.ok(w.requests() > attempted);
    assert.equal(w.warnings.length, 2);
  });
});
