// A credential probe never holds the credential queue: with the queue's two workers and
// three credentials whose Harvester never answers, a fourth, good one is probed and reported
// valid at once; the slow ones end as unreachable at the probe deadline.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../kube/client.js';
import { formatKey, parseKey, type ObjectKey } from '../../api/object-key.js';
import { WorkQueue } from '../../kube/work-queue.js';
import { silentLogger } from '../../log/logger.js';
import { CREDENTIAL_KEY_CLUSTER_ID, CREDENTIAL_KEY_KUBECONFIG } from '../../rancher/cloud-credential.js';
import type { RancherCaches } from '../common/caches.js';
import { CredentialMonitor } from './credential-monitor.js';
import type { EventRecorder } from '../common/events.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { controllerMetrics } from '../common/metrics.js';
import type { SecretObject } from '../common/types.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function secret(name: string): SecretObject {
  return {
    metadata: { name, namespace: 'cattle-global-data', resourceVersion: '1' },
    data: { [CREDENTIAL_KEY_KUBECONFIG]: b64(name), [CREDENTIAL_KEY_CLUSTER_ID]: b64('c-h1') },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('CredentialMonitor', () => {
  it('probes beside the queue: slow Harvesters do not delay another credential', async () => {
    const secrets = ['slow-1', 'slow-2', 'slow-3', 'good'].map(secret);
    const never = new Promise<never>(() => undefined);
    const clientFor = (name: string): KubeClient =>
      ({ create: () => (name === 'good' ? Promise.resolve({}) : never) }) as unknown as KubeClient;
    const list = <T>(items: T[]) => ({ list: () => items, byIndex: () => items, get: () => undefined });
    const ref: { queue?: WorkQueue } = {};
    const monitor = new CredentialMonitor({
      caches: {
        credentials: {
          get: (key: ObjectKey) => secrets.find((s) => s.metadata.name === key.name),
          list: () => secrets,
        },
        provisioningClusters: list([]),
        harvesterMachines: list([]),
      } as unknown as RancherCaches,
      harvester: {
        forSecret: (s: SecretObject) => clientFor(s.metadata.name),
      } as unknown as HarvesterClients,
      events: { record: () => undefined } as unknown as EventRecorder,
      metrics: controllerMetrics(),
      logger: silentLogger,
      probeIntervalMs: 600_000,
      expiringSoonMs: 0,
      probeDeadlineMs: 400,
      enqueueClusters: () => undefined,
      enqueueCredential: (key) => ref.queue?.add(formatKey(key)),
      onChange: () => undefined,
    });
    // The controller's credential queue: two workers.
    const queue = new WorkQueue((key) => monitor.reconcileCredential(parseKey(key)), { concurrency: 2 });
    ref.queue = queue;
    try {
      for (const s of secrets) queue.add(`cattle-global-data/${s.metadata.name}`);
      const started = performance.now();
      while (monitor.records.get('cattle-global-data/good')?.health.state !== 'valid') {
        assert.ok(performance.now() - started < 200, 'the good credential waited behind the slow ones');
        await sleep(5);
      }
      await monitor.probesSettled();
      await queue.idle();
      for (const slow of ['slow-1', 'slow-2', 'slow-3'])
        assert.equal(monitor.records.get(`cattle-global-data/${slow}`)?.probe, 'unreachable', slow);
    } finally {
      await queue.stop();
    }
  });
});
