import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildSummary, MAX_REFERRERS, renderSummaryText } from './status-report.js';

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
});
