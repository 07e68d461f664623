import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { finalizerDecision } from './finalizer.js';

const obj = (finalizers: string[] | undefined, deleting: boolean) => ({
  metadata: {
    name: 'o',
    ...(finalizers ? { finalizers } : {}),
    ...(deleting ? { deletionTimestamp: 'now' } : {}),
  },
});

describe('finalizerDecision (wrangler OnRemove)', () => {
  it('adds the finalizer to a live object without it, keeps it on one with it', () => {
    assert.equal(finalizerDecision(obj(undefined, false), 'f'), 'add');
    assert.equal(finalizerDecision(obj(['other'], false), 'f'), 'add');
    assert.equal(finalizerDecision(obj(['other', 'f'], false), 'f'), 'present');
  });

  it('runs the handler and removes only while its own finalizer holds a deleted object', () => {
    assert.equal(finalizerDecision(obj(['f'], true), 'f'), 'remove');
    assert.equal(finalizerDecision(obj(['other'], true), 'f'), 'gone');
    assert.equal(finalizerDecision(obj(undefined, true), 'f'), 'gone');
  });
});
