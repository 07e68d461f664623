import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { classifyDeletion, parseGoBool } from './deletion-scope.js';
import type { KubeObject } from '../../kube/resources.js';

const obj = (name: string, opts: { deleting?: boolean; skip?: string } = {}): KubeObject => ({
  metadata: {
    name,
    namespace: 'fleet-default',
    ...(opts.deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}),
    ...(opts.skip !== undefined
      ? { annotations: { 'harvesterhci.io/skipHarvesterMachineProvisionCleanup': opts.skip } }
      : {}),
  },
});

describe('classifyDeletion', () => {
  it('does nothing for a machine that is not being deleted', () => {
    const r = classifyDeletion({
      machine: obj('m'),
      capiCluster: obj('c', { deleting: true }),
      provisioningCluster: undefined,
    });
    assert.equal(r.kind, 'not-deleting');
  });
  it('treats a deleted machine of a live cluster as scale-down / replacement', () => {
    const r = classifyDeletion({
      machine: obj('m', { deleting: true }),
      capiCluster: obj('c'),
      provisioningCluster: obj('c'),
    });
    assert.equal(r.kind, 'single-machine');
  });
  it('sees a whole-cluster deletion on the CAPI Cluster or on the provisioning Cluster', () => {
    const m = obj('m', { deleting: true });
    assert.equal(
      classifyDeletion({
        machine: m,
        capiCluster: obj('c', { deleting: true }),
        provisioningCluster: obj('c'),
      }).kind,
      'whole-cluster',
    );
    assert.equal(
      classifyDeletion({
        machine: m,
        capiCluster: obj('c'),
        provisioningCluster: obj('c', { deleting: true }),
      }).kind,
      'whole-cluster',
    );
    assert.equal(
      classifyDeletion({
        machine: m,
        capiCluster: undefined,
        provisioningCluster: obj('c', { deleting: true }),
      }).kind,
      'whole-cluster',
    );
  });
  it('honours the opt-out on either cluster, with any Go-true spelling', () => {
    const m = obj('m', { deleting: true });
    for (const skip of ['true', 'True', '1', 't']) {
      const r = classifyDeletion({
        machine: m,
        capiCluster: obj('c', { deleting: true, skip }),
        provisioningCluster: obj('c'),
      });
      assert.equal(r.kind, 'opted-out');
      const p = classifyDeletion({
        machine: m,
        capiCluster: obj('c', { deleting: true }),
        provisioningCluster: obj('c', { skip }),
      });
      assert.equal(p.kind, 'opted-out');
    }
    for (const skip of ['false', 'yes', '']) {
      const r = classifyDeletion({
        machine: m,
        capiCluster: obj('c', { deleting: true, skip }),
        provisioningCluster: obj('c'),
      });
      assert.equal(r.kind, 'whole-cluster', `skip=${skip}`);
    }
  });
  it('keeps the data when neither cluster can be found', () => {
    const r = classifyDeletion({
      machine: obj('m', { deleting: true }),
      capiCluster: undefined,
      provisioningCluster: undefined,
    });
    assert.equal(r.kind, 'cluster-unknown');
  });
  it('never says whole-cluster unless a cluster is being deleted (property)', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        (md, cExists, cDel, pExists, pDel) => {
          const r = classifyDeletion({
            machine: obj('m', { deleting: md }),
            capiCluster: cExists ? obj('c', { deleting: cDel }) : undefined,
            provisioningCluster: pExists ? obj('c', { deleting: pDel }) : undefined,
          });
          if (r.kind === 'whole-cluster') assert.ok(md && ((cExists && cDel) || (pExists && pDel)));
        },
      ),
    );
  });
});

describe('parseGoBool', () => {
  it('accepts exactly what Go accepts', () => {
    assert.equal(parseGoBool('TRUE'), true);
    assert.equal(parseGoBool('F'), false);
    assert.equal(parseGoBool('yes'), undefined);
    assert.equal(parseGoBool(undefined), undefined);
  });
});
