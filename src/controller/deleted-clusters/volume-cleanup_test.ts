import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { LABEL_GUEST_CLUSTER_NAME } from '../../harvester/labels.js';
import type { KubeClient } from '../../kube/client.js';
import { KubeError } from '../../kube/errors.js';
import { Resources, type ResourceType } from '../../kube/resources.js';
import { silentLogger } from '../../log/logger.js';
import { CREDENTIAL_KEY_CLUSTER_ID, CREDENTIAL_KEY_KUBECONFIG } from '../../rancher/cloud-credential.js';
import { CAPI_LABEL_CLUSTER_NAME } from '../../rancher/labels.js';
import type { RancherCaches } from '../common/caches.js';
import { fakeCache } from '../testing/fake-cache.js';
import type { EventRecorder } from '../common/events.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { VolumeCleanup, volumeCleanupMetrics } from './volume-cleanup.js';
import type { VolumeOwnership } from '../guest-volumes/volume-ownership.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const pvc = (name: string, cluster?: string) => ({
  metadata: {
    name,
    namespace: 'vms',
    uid: `uid-${name}`,
    ...(cluster ? { labels: { [LABEL_GUEST_CLUSTER_NAME]: cluster } } : {}),
  },
});

/**
 * Guest cluster c1 deleted as a whole, its one HarvesterMachine gone; on Harvester in its VMs'
 * namespace: its unattached volume, its volume a VM of no cluster uses, one a live cluster's PV
 * names, another cluster's and an unlabelled one.
 */
function world(opts: { vmsLeft?: boolean; podsForbidden?: boolean } = {}) {
  const cluster = {
    metadata: { name: 'c1', namespace: 'fleet', deletionTimestamp: '2026-01-01T00:00:00Z' },
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
  const keeper = {
    metadata: { name: 'keeper', namespace: 'vms', labels: { [LABEL_GUEST_CLUSTER_NAME]: 'other' } },
    spec: {
      template: { spec: { volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'c1-used' } }] } },
    },
  };
  const lastVm = {
    metadata: { name: 'c1-vm', namespace: 'vms', labels: { [LABEL_GUEST_CLUSTER_NAME]: 'c1' } },
    spec: { template: { spec: { volumes: [] } } },
  };
  const pvcs = [
    pvc('c1-unattached', 'c1'),
    pvc('c1-used', 'c1'),
    pvc('c1-live', 'c1'),
    pvc('c2-data', 'c2'),
    pvc('plain'),
  ];
  const deleted: string[] = [];
  const client = {
    list: (type: ResourceType, o: { labelSelector?: string }) => {
      if (type === Resources.virtualMachine)
        return Promise.resolve({ items: opts.vmsLeft ? [keeper, lastVm] : [keeper] });
      if (type === Resources.virtualMachineInstance) return Promise.resolve({ items: [] });
      if (type === Resources.pod)
        return opts.podsForbidden
          ? Promise.reject(
              new KubeError('Forbidden', 'list', 'list pods: forbidden (HTTP 403)', { statusCode: 403 }),
            )
          : Promise.resolve({ items: [] });
      if (type === Resources.pvc) {
        const [, value] = (o.labelSelector ?? '').split('=');
        return Promise.resolve({
          items: value ? pvcs.filter((p) => p.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME] === value) : pvcs,
        });
      }
      return Promise.reject(new Error(`unexpected list of ${type.plural}`));
    },
    delete: (type: ResourceType, key: { name: string }, o: { preconditions?: { uid?: string } }) => {
      assert.equal(type, Resources.pvc);
      assert.equal(o.preconditions?.uid, `uid-${key.name}`, 'deleted only as the PVC listed');
      deleted.push(key.name);
      return Promise.resolve(true);
    },
  } as unknown as KubeClient;
  const events: string[] = [];
  const cleanup = new VolumeCleanup({
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
      record: (_t: unknown, _o: unknown, type: string, reason: string, m: string) =>
        void events.push(`${type} ${reason}: ${m}`),
    } as unknown as EventRecorder,
    metrics: volumeCleanupMetrics(new Registry()),
    logger: silentLogger,
    ownership: {
      recordInventoried: () => Promise.resolve(),
      namedByLiveClusters: () =>
        new Map([['c1-live', ['PersistentVolume c1-live of guest cluster fleet/c3']]]),
    } as unknown as VolumeOwnership,
    deadlineMs: 30 * 60_000,
    onCredentialRejected: () => undefined,
    now: () => Date.parse('2026-01-01T00:01:00Z'),
  });
  return { cleanup, deleted, events, machinesGone: () => void (machines = []) };
}

const C1 = { namespace: 'fleet', name: 'c1' };

describe('VolumeCleanup', () => {
  it("deletes a deleted cluster's recorded volume that nothing uses, once its last VM is gone; keeps what a VM uses, what a live cluster names, and others'", async () => {
    const w = world();
    await w.cleanup.reconcile(C1);
    assert.deepEqual(w.deleted, [], 'a HarvesterMachine is left: nothing yet');
    w.machinesGone();
    await w.cleanup.reconcile(C1);
    assert.deepEqual(w.deleted, ['c1-unattached']);
    const event = w.events.find((e) => e.startsWith('Normal HarvesterVolumesDeleted')) ?? '';
    assert.match(
      event,
      /deleted 1 host volume\(s\) of guest cluster c1 on Harvester once its last VM was gone \(vms\/c1-unattached\)/,
    );
    assert.match(event, /vms\/c1-used \(still used by [^)]*keeper/);
    assert.match(
      event,
      /vms\/c1-live \(named by PersistentVolume c1-live of guest cluster fleet\/c3, of a guest cluster that is not deleted\)/,
    );
    await w.cleanup.reconcile(C1);
    assert.deepEqual(w.deleted, ['c1-unattached'], 'once per deletion');
  });

  it('waits while a VM of the cluster is left on Harvester', async () => {
    const w = world({ vmsLeft: true });
    await w.cleanup.reconcile(C1); // where its VMs are, learnt from its HarvesterMachine
    w.machinesGone();
    assert.deepEqual(await w.cleanup.reconcile(C1), { requeueAfterMs: 5_000 });
    assert.deepEqual(w.deleted, []);
  });

  it('deletes nothing when the pods cannot be listed (a pod may use any volume), and says so', async () => {
    const w = world({ podsForbidden: true });
    await w.cleanup.reconcile(C1);
    w.machinesGone();
    await w.cleanup.reconcile(C1);
    assert.deepEqual(w.deleted, []);
    assert.match(
      w.events.join('\n'),
      /Warning HarvesterVolumeCleanupRefused: .*could not be listed.*grant the credential list on pods/,
    );
  });
});
