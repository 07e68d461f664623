import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectReferences } from './references.js';

describe('collectReferences', () => {
  it('lists the cluster, each pool with its index, and each machine of the cluster', () => {
    const refs = collectReferences(
      [
        {
          metadata: { name: 'c1', namespace: 'fleet-default' },
          spec: {
            cloudCredentialSecretName: 'cattle-global-data:cc-new',
            rkeConfig: {
              machinePools: [
                { name: 'p0' },
                { name: 'p1', cloudCredentialSecretName: 'cattle-global-data:cc-pool' },
              ],
            },
          },
        },
      ],
      [
        {
          metadata: {
            name: 'm1',
            namespace: 'fleet-default',
            labels: { 'cluster.x-k8s.io/cluster-name': 'c1' },
          },
          spec: { common: { cloudCredentialSecretName: 'cattle-global-data:cc-old' } },
        },
        {
          metadata: {
            name: 'm2',
            namespace: 'fleet-default',
            labels: { 'cluster.x-k8s.io/cluster-name': 'other' },
          },
          spec: { common: { cloudCredentialSecretName: 'cattle-global-data:cc-x' } },
        },
      ],
    );
    assert.equal(refs.length, 1);
    assert.equal(refs[0]?.clusterCredential?.name, 'cc-new');
    assert.deepEqual(
      refs[0]?.references.map((r) => [r.referrer, r.credential.name, r.poolIndex]),
      [
        ['cluster fleet-default/c1', 'cc-new', undefined],
        ['machine pool p1 of fleet-default/c1', 'cc-pool', 1],
        ['HarvesterMachine fleet-default/m1', 'cc-old', undefined],
      ],
    );
  });
});
