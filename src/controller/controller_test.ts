// The controller's lifecycle against a scripted apiserver with nothing in it: it is ready once
// every cache synced, and halt() (leadership lost) stops every one of its controllers at once,
// the load balancer cleanup's too (a hand-written list of queues once left it running).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { objectKey } from '../api/object-key.js';
import { ScriptedServer, answerJson } from '../kube/testing.js';
import { silentLogger } from '../log/logger.js';
import { CleanupController } from './controller.js';
import { controllerMetrics } from './common/metrics.js';

let server: ScriptedServer;

before(async () => {
  server = await ScriptedServer.start((req, res) => {
    if (req.query.get('watch') === '1') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return; // an open, quiet watch
    }
    if (req.method === 'GET' && !req.path.includes('/configmaps/'))
      return answerJson(res, 200, { kind: 'List', metadata: { resourceVersion: '1' }, items: [] });
    answerJson(res, req.method === 'GET' ? 404 : 200, {
      kind: 'ConfigMap',
      metadata: { name: 'status', namespace: 'system' },
    });
  });
});
after(() => server.close());

const reconciles = async (metrics: ReturnType<typeof controllerMetrics>): Promise<Record<string, number>> => {
  const counts: Record<string, number> = {};
  for (const v of (await metrics.reconcileTotal.get()).values)
    counts[String(v.labels.controller)] = (counts[String(v.labels.controller)] ?? 0) + v.value;
  return counts;
};

describe('CleanupController', () => {
  it('is ready once synced, and halt() stops all six controllers', async () => {
    const metrics = controllerMetrics();
    const controller = new CleanupController({
      client: server.client(),
      logger: silentLogger,
      metrics,
      config: {
        namespaces: ['fleet-default'],
        credentialNamespace: 'cattle-global-data',
        hookName: 'harvester-machine-cleanup',
        gateDeadlineMs: 60_000,
        probeIntervalMs: 60_000,
        expiringSoonMs: 60_000,
        statusConfigMap: { namespace: 'system', name: 'status' },
        identity: 'test',
      },
    });
    try {
      assert.equal(controller.ready, false);
      await controller.start();
      assert.equal(controller.ready, true);
      const names = controller.manager.controllers.map((c) => c.name);
      assert.deepEqual(names, [
        'machines',
        'credentials',
        'clusters',
        'load-balancers',
        'guest-volumes',
        'volume-cleanup',
      ]);

      controller.halt();
      assert.equal(controller.ready, false);
      for (const c of controller.manager.controllers) {
        assert.ok(c.stopped, `${c.name} stopped by halt()`);
        c.enqueue(objectKey('fleet-default', 'x'));
      }
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(await reconciles(metrics), {}, 'no controller reconciled anything after halt()');
    } finally {
      await controller.stop();
    }
  });
});
