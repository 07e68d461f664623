// What the guest watches' states become: an Event for a guest that cannot be watched, none for
// one whose kubeconfig Rancher has not written yet (a cluster still provisioning is not a fault;
// at Rancher's scale one Event per such cluster was a write per cluster at every start).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { silentLogger } from '../../log/logger.js';
import type { RancherCaches } from '../common/caches.js';
import type { EventRecorder } from '../common/events.js';
import type { GuestWatches, GuestWatchState } from './guest-watches.js';
import type { HarvesterClients } from '../../harvester-access/clients.js';
import { fakeCache } from '../testing/fake-cache.js';
import { ownershipMetrics, VolumeOwnership } from './volume-ownership.js';

const cluster = { namespace: 'fleet-default', name: 'c1' };
const prov = {
  apiVersion: 'provisioning.cattle.io/v1',
  kind: 'Cluster',
  metadata: { ...cluster, uid: 'u1' },
};

function ownership() {
  const events: Array<{ type: string; reason: string; message: string }> = [];
  const counts = new Map<GuestWatchState, number>();
  const registry = new Registry();
  const subject = new VolumeOwnership({
    caches: {
      provisioningClusters: fakeCache(() => prov),
      capiClusters: fakeCache(() => undefined),
    } as unknown as RancherCaches,
    harvester: {} as HarvesterClients,
    watches: { counts: () => counts } as unknown as GuestWatches,
    events: {
      record: (_t: unknown, _o: unknown, type: string, reason: string, message: string) =>
        events.push({ type, reason, message }),
    } as unknown as EventRecorder,
    metrics: ownershipMetrics(registry),
    logger: silentLogger,
    mode: 'watch',
    onCredentialRejected: () => undefined,
  });
  return { subject, events, counts, registry };
}

describe('VolumeOwnership.onWatchState', () => {
  it('records no Event while Rancher has not written the kubeconfig, and counts the state', async () => {
    const o = ownership();
    o.counts.set('waiting', 1);
    o.subject.onWatchState(
      cluster,
      'waiting',
      'Rancher has not written Secret fleet-default/c1-kubeconfig yet',
    );
    o.subject.onWatchState(cluster, 'connecting', '');
    assert.deepEqual(o.events, []);
    assert.match(await o.registry.metrics(), /harvester_machine_guest_watches\{state="waiting"\} 1/);
  });

  it('records a Warning for a guest that cannot be watched, and a Normal Event once it is', () => {
    const o = ownership();
    for (const state of ['no-kubeconfig', 'unreachable', 'unusable'] as const)
      o.subject.onWatchState(cluster, state, 'why');
    o.subject.onWatchState(cluster, 'watching', '');
    assert.deepEqual(
      o.events.map((e) => e.type),
      ['Warning', 'Warning', 'Warning', 'Normal'],
    );
    assert.match(o.events[0]?.message ?? '', /\(no-kubeconfig\): why/);
  });
});
