// What is kept of Harvester's first start: only what it created, without server fields; a file
// for another version or of another shape is not used.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/kube/resources.js';
import {
  STATE_FILE,
  crdsHarvesterCreated,
  loadStartedState,
  parseStartedState,
  restorable,
  saveStartedState,
  type StartedState,
} from './started-state.js';

const crd = (name: string, labels?: Record<string, string>): KubeObject =>
  ({
    metadata: { name, uid: 'u', resourceVersion: '7', ...(labels ? { labels } : {}) },
    spec: { group: 'g' },
    status: { acceptedNames: {} },
  }) as unknown as KubeObject;

const secret = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'harvester-system' },
});
const config = (kind: string): KubeObject => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind,
  metadata: { name: kind },
});

const state: StartedState = {
  version: 'v1.8.0',
  crds: [],
  secrets: [secret('harvester-webhook-ca'), secret('harvester-webhook-tls')],
  validating: config('ValidatingWebhookConfiguration'),
  mutating: config('MutatingWebhookConfiguration'),
};

describe("Harvester's started state", () => {
  it('keeps the CRDs wrangler applied for Harvester, as one writes them again, with their kind', () => {
    const kept = crdsHarvesterCreated([
      crd('a.example', { 'objectset.rio.cattle.io/hash': 'h' }),
      crd('b.example'),
    ]);
    assert.deepEqual(kept, [
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'a.example', labels: { 'objectset.rio.cattle.io/hash': 'h' } },
        spec: { group: 'g' },
      },
    ]);
  });

  it('drops server-set fields and owners from an object', () => {
    const obj = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 's',
        uid: 'u',
        resourceVersion: '1',
        creationTimestamp: 't',
        generation: 2,
        managedFields: [],
        ownerReferences: [{}],
        annotations: { a: 'b' },
      },
      data: { x: 'eQ==' },
    } as unknown as KubeObject;
    assert.deepEqual(restorable(obj), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', annotations: { a: 'b' } },
      data: { x: 'eQ==' },
    });
  });

  it('is used only for the same version and when shaped as written', () => {
    const text = JSON.stringify(state);
    assert.deepEqual(parseStartedState(text, 'v1.8.0'), state);
    assert.equal(parseStartedState(text, 'v1.8.1'), undefined);
    assert.equal(parseStartedState('{', 'v1.8.0'), undefined);
    assert.equal(
      parseStartedState(JSON.stringify({ ...state, secrets: [secret('x')] }), 'v1.8.0'),
      undefined,
    );
    assert.equal(
      parseStartedState(JSON.stringify({ ...state, validating: { kind: 'x' } }), 'v1.8.0'),
      undefined,
    );
  });

  it('is saved readable by its owner only and read back', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-state-'));
    try {
      await saveStartedState(dir, state);
      assert.equal(fs.statSync(path.join(dir, STATE_FILE)).mode & 0o777, 0o600);
      assert.deepEqual(await loadStartedState(dir, 'v1.8.0'), state);
      assert.equal(await loadStartedState(path.join(dir, 'missing'), 'v1.8.0'), undefined);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
