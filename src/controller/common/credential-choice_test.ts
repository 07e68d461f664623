import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  credentialCandidates,
  findMachinePool,
  parseCredentialRef,
  usableCandidates,
  type CredentialCandidate,
} from './credential-choice.js';
import type { ProvisioningCluster } from './types.js';

const cluster: ProvisioningCluster = {
  metadata: { name: 'c1', namespace: 'fleet-default' },
  spec: {
    cloudCredentialSecretName: 'cattle-global-data:cc-cluster',
    rkeConfig: {
      machinePools: [
        { name: 'a', cloudCredentialSecretName: 'cattle-global-data:cc-pool-a' },
        { name: 'a-b', machineConfigRef: { name: 'nc-a-b' } },
      ],
    },
  },
};

describe('parseCredentialRef', () => {
  it('splits namespace:name and defaults a bare name to the given namespace', () => {
    assert.deepEqual(parseCredentialRef('cattle-global-data:cc-x', 'ns'), {
      namespace: 'cattle-global-data',
      name: 'cc-x',
    });
    assert.deepEqual(parseCredentialRef('cc-x', 'fleet-default'), {
      namespace: 'fleet-default',
      name: 'cc-x',
    });
    assert.equal(parseCredentialRef('', 'ns'), undefined);
    assert.equal(parseCredentialRef(null, 'ns'), undefined);
  });
});

describe('findMachinePool', () => {
  it('links by the rke-machine-pool-name label first', () => {
    const m = findMachinePool({
      cluster,
      machineLabels: { 'rke.cattle.io/rke-machine-pool-name': 'a-b' },
      machineName: 'c1-a-x-y',
    });
    assert.equal(m?.pool.name, 'a-b');
  });
  it('links by the deployment-name label (SafeConcatName(cluster, pool))', () => {
    const m = findMachinePool({
      cluster,
      machineLabels: { 'cluster.x-k8s.io/deployment-name': 'c1-a' },
      machineName: 'x',
    });
    assert.equal(m?.pool.name, 'a');
  });
  it('falls back to the longest matching name prefix', () => {
    assert.equal(
      findMachinePool({ cluster, machineLabels: {}, machineName: 'c1-a-b-5f6d-x2' })?.pool.name,
      'a-b',
    );
    assert.equal(
      findMachinePool({ cluster, machineLabels: {}, machineName: 'c1-a-5f6d-x2' })?.pool.name,
      'a',
    );
    assert.equal(findMachinePool({ cluster, machineLabels: {}, machineName: 'other-a-1-2' }), undefined);
  });
});

describe('credentialCandidates', () => {
  it('puts the pool credential first, then the cluster, then what the machine recorded, without duplicates', () => {
    const c = credentialCandidates({
      cluster,
      pool: cluster.spec?.rkeConfig?.machinePools?.[0],
      harvesterMachine: {
        metadata: { name: 'm', namespace: 'fleet-default' },
        spec: { common: { cloudCredentialSecretName: 'cattle-global-data:cc-cluster' } },
        status: { cloudCredentialSecretName: 'cattle-global-data:cc-old' },
      },
    });
    assert.deepEqual(
      c.map((x) => [x.ref.name, x.source]),
      [
        ['cc-pool-a', 'machine pool a'],
        ['cc-cluster', 'cluster'],
        ['cc-old', 'HarvesterMachine status'],
      ],
    );
  });
  it('uses the cluster credential for a pool without one', () => {
    const c = credentialCandidates({
      cluster,
      pool: cluster.spec?.rkeConfig?.machinePools?.[1],
      harvesterMachine: undefined,
    });
    assert.equal(c[0]?.ref.name, 'cc-cluster');
  });
});

describe('usableCandidates', () => {
  const cand = (name: string): CredentialCandidate => ({ ref: { namespace: 'n', name }, source: name });
  it('starts at the first existing Secret and keeps only same-Harvester fallbacks', () => {
    const ids: Record<string, string | null | undefined> = { gone: null, a: 'h1', b: 'h2', c: 'h1' };
    const r = usableCandidates([cand('gone'), cand('a'), cand('b'), cand('c')], (c) => ids[c.ref.name]);
    assert.deepEqual(
      r.map((c) => c.ref.name),
      ['a', 'c'],
    );
  });
  it('allows no fallback when the first has no Harvester cluster id', () => {
    const r = usableCandidates([cand('a'), cand('b')], (c) => (c.ref.name === 'a' ? undefined : 'h1'));
    assert.deepEqual(
      r.map((c) => c.ref.name),
      ['a'],
    );
  });
});
