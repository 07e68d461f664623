import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findOrphans } from '../../harvester/orphaned-volumes.js';
import { renderOrphanReport } from './orphan-view.js';

describe('leftovers: volumes of uncertain ownership', () => {
  it('are listed as kept, each with why, and counted among what is not listed (ADR 0021)', () => {
    const report = findOrphans(
      {
        pvcs: [
          {
            metadata: {
              name: 'pvc-00000001-1111-2222-3333-444455556666',
              namespace: 'default',
              creationTimestamp: '2026-01-01T00:00:00Z',
              annotations: { 'harvester-machine.io/guest-claimants': 'a,b' },
            },
            spec: {},
          },
        ],
        vms: [],
        vmis: [],
        pods: [],
        events: [],
      },
      { now: new Date('2026-02-01T00:00:00Z'), minAgeMs: 0 },
    );
    const text = renderOrphanReport(report, { minAge: '1h' }).join('\n');
    assert.match(text, /Kept, ownership not certain \(1\): never deleted automatically, nor by --delete/);
    assert.match(
      text,
      /default\s+pvc-00000001-1111-2222-3333-444455556666\s+named by guest clusters a, b: ownership contested/,
    );
    assert.match(text, /1 of uncertain ownership \(above\)/);
  });
});
