// The one controller mechanism (src/kube/manager.ts) on a real apiserver: a cache asked for
// by several controllers is one list+watch; what exists before start is reconciled once,
// after every cache has synced (a reconcile never meets a half-filled cache); events map to
// keys (an owner's); halt() stops every controller at once and stop() the watches too.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { objectKey, type ObjectKey } from '../src/api/object-key.js';
import { KubeClient } from '../src/kube/client.js';
import { Manager } from '../src/kube/manager.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import type { WorkQueueMetrics } from '../src/kube/work-queue.js';
import { silentLogger } from '../src/log/logger.js';
import { createNamespace } from '../sandbox/control-plane/access.js';
import { useControlPlane } from './support/control-plane-fixture.js';
import { eventually } from './support/eventually.js';

const fixture = useControlPlane({ name: 'manager', crds: false, controllerManager: false });

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

const configMap = (namespace: string, name: string, owner?: string): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace, name, ...(owner ? { labels: { owner } } : {}) },
  data: {},
});

function world(): { client: KubeClient; requests: string[]; manager: Manager } {
  const requests: string[] = [];
  const client = KubeClient.fromKubeconfig(fixture.cp.adminKubeconfig, {
    onRequest: (method, path) => requests.push(`${method} ${path}`),
  });
  return { client, requests, manager: new Manager({ client, logger: silentLogger }) };
}

const keys = (seen: ObjectKey[]): string[] => seen.map((k) => `${k.namespace}/${k.name}`).sort();

describe('Manager', () => {
  it('shares one cache per kind and selector, and reconciles what existed only after every cache synced', async () => {
    const namespace = await createNamespace(fixture.cp.admin, 'manager');
    await fixture.cp.admin.create(Resources.configMap, configMap(namespace, 'a'));
    await fixture.cp.admin.create(Resources.secret, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { namespace, name: 'a' },
    });
    const { client, requests, manager } = world();
    const maps = manager.cache<ConfigMap>({ type: Resources.configMap, namespaces: [namespace] });
    const secrets = manager.cache<KubeObject>({ type: Resources.secret, namespaces: [namespace] });
    assert.equal(manager.cache({ type: Resources.configMap, namespaces: [namespace] }), maps, 'shared');
    const seenBySecretsOf: Array<{ key: ObjectKey; secret: boolean; synced: boolean }> = [];
    const seenByOther: ObjectKey[] = [];
    manager
      .controller('maps', {
        reconcile: (key) => {
          // The Secret's cache is filled before any reconcile runs, however the lists raced.
          seenBySecretsOf.push({ key, secret: secrets.get(key) !== undefined, synced: manager.synced });
          return Promise.resolve();
        },
      })
      .watch(maps);
    manager
      .controller('other', {
        reconcile: (key) => {
          seenByOther.push(key);
          return Promise.resolve();
        },
      })
      .watch(manager.cache<ConfigMap>({ type: Resources.configMap, namespaces: [namespace] }));
    assert.equal(manager.synced, false);
    try {
      await manager.start();
      assert.equal(manager.synced, true);
      await eventually('both controllers to reconcile a', () =>
        Promise.resolve(seenBySecretsOf.length === 1 && seenByOther.length === 1),
      );
      assert.deepEqual(seenBySecretsOf, [{ key: objectKey(namespace, 'a'), secret: true, synced: true }]);
      const configMapWatches = requests.filter((r) => r.startsWith('WATCH') && r.includes('/configmaps'));
      assert.equal(
        configMapWatches.length,
        1,
        `one watch of ConfigMaps for two controllers: ${requests.join(', ')}`,
      );
    } finally {
      await manager.stop();
      client.close();
    }
  });

  it('maps events to keys, counts per controller, and halts every controller at once', async () => {
    const namespace = await createNamespace(fixture.cp.admin, 'manager');
    const { client } = world();
    const metrics = new Map<string, number>();
    const counting = new Manager({
      client,
      logger: silentLogger,
      metricsFor: (name): WorkQueueMetrics => ({
        depth: () => undefined,
        added: () => undefined,
        retried: () => undefined,
        waited: () => undefined,
        processed: () => metrics.set(name, (metrics.get(name) ?? 0) + 1),
      }),
    });
    const maps = counting.cache<ConfigMap>({ type: Resources.configMap, namespaces: [namespace] });
    const owners: ObjectKey[] = [];
    const all: ObjectKey[] = [];
    counting
      .controller('owners', {
        reconcile: (key) => {
          owners.push(key);
          return Promise.resolve();
        },
      })
      .watch(maps, (e) => {
        const owner = e.object.metadata.labels?.owner;
        return owner ? objectKey(e.object.metadata.namespace, owner) : undefined;
      });
    counting
      .controller('all', {
        reconcile: (key) => {
          all.push(key);
          return Promise.resolve();
        },
      })
      .watch(maps);
    try {
      await counting.start();
      await fixture.cp.admin.create(Resources.configMap, configMap(namespace, 'child', 'parent'));
      await eventually('the owner and the object to be reconciled', () =>
        Promise.resolve(owners.length === 1 && all.length === 1),
      );
      assert.deepEqual(keys(owners), [`${namespace}/parent`]);
      assert.deepEqual(keys(all), [`${namespace}/child`]);
      assert.deepEqual(Object.fromEntries(metrics), { owners: 1, all: 1 });
      assert.deepEqual(
        counting.controllers.map((c) => [c.name, c.processed]),
        [
          ['owners', 1],
          ['all', 1],
        ],
      );

      counting.halt();
      assert.ok(
        counting.controllers.every((c) => c.stopped),
        'every controller stopped by halt()',
      );
      await fixture.cp.admin.create(Resources.configMap, configMap(namespace, 'late', 'parent'));
      for (const c of counting.controllers) c.enqueue(objectKey(namespace, 'late'));
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(owners.length + all.length, 2, 'nothing reconciled after halt()');
    } finally {
      await counting.stop();
      client.close();
    }
  });

  it('rejects start when a cache cannot sync, and refuses a cache asked for after start', async () => {
    const { client, manager } = world();
    manager.cache({
      type: {
        group: 'nope.example.com',
        version: 'v1',
        plural: 'nothings',
        kind: 'Nothing',
        namespaced: true,
      },
    });
    try {
      await assert.rejects(manager.start(), /404|not found/i);
      assert.equal(manager.synced, false);
      assert.throws(() => manager.cache({ type: Resources.secret }), /after the manager started/);
    } finally {
      await manager.stop();
      client.close();
    }
  });
});
