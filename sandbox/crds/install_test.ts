import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/resources.js';
import { installEstablished } from './install.js';

/** A client that answers creates with resourceVersion 7 and watches with the CRD Established. */
function recordingClient(): { client: KubeClient; lists: number; watchedFrom: Array<string | undefined> } {
  const seen = { lists: 0, watchedFrom: [] as Array<string | undefined> };
  const established = (name: string): KubeObject =>
    ({
      metadata: { name, resourceVersion: '8' },
      status: { conditions: [{ type: 'Established', status: 'True' }] },
    }) as KubeObject;
  const client = {
    create: (_type: unknown, obj: KubeObject) =>
      Promise.resolve({ ...obj, metadata: { ...obj.metadata, resourceVersion: '7' } }),
    list: () => {
      seen.lists++;
      return Promise.resolve({ metadata: { resourceVersion: '7' }, items: [] });
    },
    watch: (
      _type: unknown,
      opts: { fieldSelector?: string; resourceVersion?: string },
      onEvent: (e: { type: string; object: KubeObject }) => void,
    ) => {
      seen.watchedFrom.push(opts.resourceVersion);
      const name = (opts.fieldSelector ?? '').replace('metadata.name=', '');
      queueMicrotask(() => onEvent({ type: 'MODIFIED', object: established(name) }));
      let stop = (): void => undefined;
      const done = new Promise<void>((resolve) => (stop = resolve));
      return { done, stop };
    },
  };
  return {
    client: client as unknown as KubeClient,
    get lists() {
      return seen.lists;
    },
    watchedFrom: seen.watchedFrom,
  };
}

describe('installing CRDs', () => {
  it("waits for each to be Established by watching from its create's answer, listing none", async () => {
    const rec = recordingClient();
    const crds = ['a', 'b', 'c'].map((n) => ({ metadata: { name: `${n}.example.com` } }));
    const names = await installEstablished(rec.client, crds, { timeoutMs: 5_000, existing: 'keep' });
    assert.deepEqual(names, ['a.example.com', 'b.example.com', 'c.example.com']);
    // A LIST of CRDs makes kube-apiserver decode every CRD it holds: one per wait was most of a
    // sandbox start's CRD reads.
    assert.equal(rec.lists, 0);
    assert.deepEqual(rec.watchedFrom, ['7', '7', '7']);
  });
});
