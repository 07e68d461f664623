import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildSummary,
  MAX_REFERRERS,
  MAX_SUMMARY_BYTES,
  renderSummaryText,
  summaryData,
} from './status-report.js';

describe('status summary', () => {
  it('lists credentials, held gates and mismatches, with the fix, and no secret', () => {
    const s = buildSummary({
      now: new Date('2025-06-01T00:00:00Z'),
      holder: 'hm-0',
      credentials: [
        {
          secret: 'cattle-global-data/cc-old',
          harvesterClusterId: 'c-m-1',
          health: { state: 'expired', detail: 'expired at x' },
          probe: 'rejected',
          version: '1',
        },
      ],
      referencedBy: () => ['machine pool p of fleet-default/c1'],
      held: [
        {
          machine: 'fleet-default/m1',
          reason: 'HarvesterCredentialRejected',
          message: 'rejected',
          since: 'a',
          releaseBy: 'b',
        },
      ],
      mismatches: [
        {
          referrer: 'machine pool p of fleet-default/c1',
          cluster: { namespace: 'fleet-default', name: 'c1' },
          expired: { namespace: 'cattle-global-data', name: 'cc-old' },
          valid: { namespace: 'cattle-global-data', name: 'cc-new' },
          harvesterClusterId: 'c-m-1',
          fix: 'Renew ...',
          shortFix: 'Renew',
        },
      ],
    });
    const text = renderSummaryText(s);
    assert.match(text, /EXPIRED\s+cattle-global-data\/cc-old \(Harvester c-m-1\): expired at x/);
    assert.match(text, /fleet-default\/m1: HarvesterCredentialRejected since a, released by b/);
    assert.match(text, /fix: Renew/);
    assert.equal((JSON.parse(JSON.stringify(s)) as { schemaVersion: number }).schemaVersion, 1);
  });

  it("names each guest cluster's watch and, for a deleted one, the volumes that go and why", () => {
    const s = buildSummary({
      now: new Date('2025-06-01T00:00:00Z'),
      holder: 'hm-0',
      credentials: [],
      referencedBy: () => [],
      held: [],
      mismatches: [],
      guestWatches: [
        {
          cluster: 'fleet-default/c2',
          state: 'unreachable',
          since: 't0',
          detail: 'connect ECONNREFUSED',
          failures: 3,
        },
      ],
      inventories: [
        {
          cluster: 'fleet-default/c1',
          takenAt: 't1',
          source: "the guest cluster's apiserver",
          volumes: [
            {
              namespace: 'vms',
              name: 'pvc-1',
              pv: 'pvc-1',
              claim: 'default/data-db-0',
              outcome: 'labelled now (last inventory)',
            },
            {
              namespace: 'vms',
              name: 'pvc-3',
              pv: 'copy',
              outcome: 'labelled for guest cluster c9, left alone',
            },
          ],
          failures: ['pvc-2: no time left'],
        },
      ],
    });
    const text = renderSummaryText(s);
    assert.match(
      text,
      /UNREACHABLE\s+fleet-default\/c2 since t0: connect ECONNREFUSED \(3 attempts, retried with backoff\)/,
    );
    assert.match(text, /fleet-default\/c1 at t1, from the guest cluster's apiserver: 2 host volume\(s\)/);
    assert.match(
      text,
      /vms\/pvc-1: guest PersistentVolume pvc-1 \(claim default\/data-db-0\); labelled now \(last inventory\); goes with the cluster/,
    );
    assert.match(
      text,
      /vms\/pvc-3: guest PersistentVolume copy; labelled for guest cluster c9, left alone; stays/,
    );
    assert.match(text, /not recorded: pvc-2: no time left/);
  });

  it('stays within a ConfigMap when a credential serves 20,000 machines: the first referrers, and a count', () => {
    const all = Array.from(
      { length: 20_000 },
      (_, i) => `HarvesterMachine fleet-default/c-${i}-pool1-abcdef-x2v9q`,
    );
    const s = buildSummary({
      now: new Date('2025-06-01T00:00:00Z'),
      holder: 'hm-0',
      credentials: Array.from({ length: 10 }, (_, i) => ({
        secret: `cattle-global-data/cc-${i}`,
        health: { state: 'valid' as const, detail: 'valid' },
        probe: 'ok' as const,
        version: '1',
      })),
      referencedBy: () => all,
      held: [],
      mismatches: [],
    });
    const [first] = s.credentials;
    assert.equal(first?.referencedBy.length, MAX_REFERRERS);
    assert.equal(first?.referencedByTotal, 20_000);
    const text = renderSummaryText(s);
    assert.match(
      text,
      new RegExp(`c-${MAX_REFERRERS - 1}-pool1-abcdef-x2v9q and ${20_000 - MAX_REFERRERS} more`),
    );
    // Both keys of the ConfigMap together, far below its 1 MiB.
    assert.ok(JSON.stringify(s, null, 2).length + text.length < 100_000);
  });

  it('fits the ConfigMap at Rancher’s scale: every list cut to fit, what is left out counted and named', () => {
    const since = '2026-12-07T00:00:00.000Z';
    const clusters = Array.from(
      { length: 2_000 },
      (_, i) => `fleet-default/cluster-${String(i).padStart(5, '0')}`,
    );
    const s = buildSummary({
      now: new Date(since),
      holder: 'hm-0',
      credentials: Array.from({ length: 200 }, (_, i) => ({
        secret: `cattle-global-data/cc-${i}`,
        health: { state: 'valid', detail: 'accepted by Harvester at the last probe' },
        probe: 'ok' as const,
        version: '1',
      })),
      referencedBy: (secret) => clusters.slice(0, 30).map((c) => `machine pool p of ${c} (${secret})`),
      held: clusters.map((machine) => ({
        machine,
        reason: 'HarvesterUnreachable',
        message: `Harvester did not answer for ${machine}: dial tcp 127.0.0.1:6443: connect: connection refused`,
        since,
        releaseBy: since,
      })),
      mismatches: [],
      guestWatches: clusters.map((cluster) => ({
        cluster,
        state: 'waiting' as const,
        since,
        detail: `Rancher has not written Secret ${cluster}-kubeconfig yet (the provisioning Cluster's status.clientSecretName is empty); it is read once Rancher names it`,
      })),
    });
    const data = summaryData(s);
    const bytes = Buffer.byteLength(data['summary.json']) + Buffer.byteLength(data['summary.txt']);
    assert.ok(bytes <= MAX_SUMMARY_BYTES, `${bytes} bytes`);
    assert.equal(s.guestClusters.length + (s.notShown?.guestClusters ?? 0), 2_000);
    assert.equal(s.gatesHeld.length + (s.notShown?.gatesHeld ?? 0), 2_000);
    assert.equal(s.credentials.length + (s.notShown?.credentials ?? 0), 200);
    assert.ok((s.notShown?.guestClusters ?? 0) > 0);
    assert.match(data['summary.txt'], /Not shown \(a ConfigMap holds 1 MiB\): .*more of guestClusters/);
  });

  it('leaves a summary that fits as it is', () => {
    const s = buildSummary({
      now: new Date('2026-12-07T00:00:00Z'),
      holder: 'hm-0',
      credentials: [],
      referencedBy: () => [],
      held: [],
      mismatches: [],
      guestWatches: [{ cluster: 'fleet-default/c1', state: 'waiting', since: 'a', detail: 'd' }],
    });
    assert.equal(s.notShown, undefined);
    assert.equal(s.guestClusters.length, 1);
    assert.doesNotMatch(renderSummaryText(s), /Not shown/);
  });
});
