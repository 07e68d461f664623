// What a guest's PVs become where they enter the controller (slimPersistentVolume behind its
// shape check): only the Harvester CSI driver's, slimmed; a malformed one dropped and counted
// by the field, never thrown on later — in particular not in another cluster's cleanup, which
// reads every live guest's volumes (harvesterVolumes, namedByOthers).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { HARVESTER_CSI_DRIVER, harvesterVolumes } from '../../harvester/guest-volumes.js';
import type { KubeObject } from '../../kube/resources.js';
import { CacheBoundExceeded, type KubeClient } from '../../kube/index.js';
import { keptVolumes, listGuestVolumes, slimPersistentVolume } from './guest-watches.js';
import { Malformed } from '../common/object-shape.js';

const pv = (over: Record<string, unknown> = {}, csi: Record<string, unknown> = {}): KubeObject =>
  ({
    metadata: { name: 'pvc-1', resourceVersion: '5', annotations: { big: 'x'.repeat(1000) } },
    spec: {
      csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: 'pvc-1', volumeAttributes: { a: 'b' }, ...csi },
      claimRef: { namespace: 'default', name: 'data', uid: 'u' },
      capacity: { storage: '1Gi' },
    },
    status: { phase: 'Bound' },
    ...over,
  }) as unknown as KubeObject;

const reasonOf = (o: unknown): string => {
  try {
    slimPersistentVolume(o as KubeObject);
    return 'kept';
  } catch (err) {
    assert.ok(err instanceof Malformed, String(err));
    return err.reason;
  }
};

describe('a guest PV where it enters', () => {
  it('keeps a Harvester CSI PV slimmed to its name, handle and claim; another driver not at all', () => {
    assert.deepEqual(slimPersistentVolume(pv()), {
      metadata: { name: 'pvc-1', resourceVersion: '5' },
      spec: {
        csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: 'pvc-1' },
        claimRef: { namespace: 'default', name: 'data' },
      },
    });
    assert.equal(slimPersistentVolume(pv({}, { driver: 'ebs.csi.aws.com' })), undefined);
    assert.equal(slimPersistentVolume(pv({ spec: { hostPath: { path: '/x' } } })), undefined);
  });

  it('names the field of a malformed one: a name not a string, too long, a handle of the wrong type', () => {
    assert.equal(reasonOf(pv({ metadata: { name: 42 } })), 'metadata.name');
    assert.equal(reasonOf(pv({ metadata: { name: 'n'.repeat(254) } })), 'metadata.name');
    assert.equal(reasonOf(pv({ metadata: { name: 'ok', resourceVersion: 7 } })), 'metadata.resourceVersion');
    assert.equal(reasonOf(pv({}, { volumeHandle: ['pvc-1'] })), 'spec.csi.volumeHandle');
    assert.equal(reasonOf(pv({}, { driver: { name: HARVESTER_CSI_DRIVER } })), 'spec.csi.driver');
    assert.equal(reasonOf(pv({ spec: 'nope' })), 'spec');
    assert.equal(reasonOf(null), 'not-an-object');
    const dropped: string[] = [];
    const kept = keptVolumes(
      [pv(), pv({ metadata: { name: 42 } }), 'text', pv({}, { driver: 'other' })],
      (r) => dropped.push(r),
    );
    assert.equal(kept.length, 1);
    assert.deepEqual(dropped, ['metadata.name', 'not-an-object']);
  });

  it('never throws on any value, and what it keeps never throws in harvesterVolumes', () => {
    const anything = fc.anything({ maxDepth: 4 });
    const pvLike = fc.record({
      metadata: fc.oneof(anything, fc.record({ name: fc.oneof(fc.string(), anything) })),
      spec: fc.oneof(
        anything,
        fc.record({
          csi: fc.oneof(
            anything,
            fc.record({
              driver: fc.oneof(fc.constant(HARVESTER_CSI_DRIVER), anything),
              volumeHandle: fc.oneof(fc.string({ maxLength: 300 }), anything),
            }),
          ),
          claimRef: fc.oneof(anything, fc.record({ namespace: anything, name: anything })),
        }),
      ),
    });
    fc.assert(
      fc.property(fc.array(fc.oneof(pvLike, anything), { maxLength: 20 }), (items) => {
        const kept = keptVolumes(items, () => undefined);
        const list = harvesterVolumes(kept);
        for (const v of list.volumes) assert.equal(typeof v.hostPvc, 'string');
      }),
      { numRuns: 300 },
    );
  });
});

describe("the last inventory's read of a guest (listGuestVolumes)", () => {
  /** A guest answering pages from `answer(continueToken)`. */
  const guest = (answer: (token: string | undefined) => { items: unknown[]; continue?: string }) => {
    const asked: Array<string | undefined> = [];
    const client = {
      list: (_type: unknown, opts: { continue?: string; limit?: number }) => {
        asked.push(opts.continue);
        const page = answer(opts.continue);
        return Promise.resolve({
          metadata: page.continue !== undefined ? { continue: page.continue } : {},
          items: page.items,
        });
      },
    } as unknown as Pick<KubeClient, 'list'>;
    return { client, asked };
  };
  const pvs = (from: number, n: number): KubeObject[] =>
    Array.from({ length: n }, (_, k) =>
      pv({ metadata: { name: `pvc-${from + k}` } }, { volumeHandle: `pvc-${from + k}` }),
    );

  it('reads every page within the bound, dropping and counting the malformed', async () => {
    const g = guest((t) => {
      const from = Number(t ?? 0);
      return {
        items: [...pvs(from, from < 200 ? 100 : 50), { metadata: { name: 1 } }],
        ...(from < 200 ? { continue: String(from + 100) } : {}),
      };
    });
    const dropped: string[] = [];
    const kept = await listGuestVolumes(g.client, 1_000, (r) => dropped.push(r));
    assert.equal(kept.length, 250);
    assert.deepEqual(g.asked, [undefined, '100', '200']);
    assert.equal(dropped.length, 3);
  });

  it('stops at the bound, at endless pages and at a continue token given twice', async () => {
    const many = guest((t) => ({ items: pvs(Number(t ?? 0), 100), continue: String(Number(t ?? 0) + 100) }));
    await assert.rejects(
      listGuestVolumes(many.client, 300, () => undefined),
      CacheBoundExceeded,
    );
    assert.equal(many.asked.length, 4);
    let n = 0;
    const endless = guest(() => ({ items: [], continue: `t${n++}` }));
    await assert.rejects(
      listGuestVolumes(endless.client, 300, () => undefined),
      /past 13 pages/,
    );
    assert.equal(endless.asked.length, 13);
    const again = guest(() => ({ items: pvs(0, 1), continue: 'same' }));
    await assert.rejects(
      listGuestVolumes(again.client, 300, () => undefined),
      /same continue token twice/,
    );
    assert.equal(again.asked.length, 2);
  });
});
