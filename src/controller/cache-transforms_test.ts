import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { slimHarvesterMachine, slimMachine, slimSecret } from './cache-transforms.js';

describe('cache transforms', () => {
  it('keeps what the controller reads of a HarvesterMachine, drops the rest', () => {
    const slim = slimHarvesterMachine({
      kind: 'HarvesterMachine',
      metadata: {
        name: 'm',
        namespace: 'n',
        uid: 'u',
        labels: { a: 'b' },
        annotations: { big: 'x' },
        managedFields: [{}],
      } as never,
      spec: {
        vmNamespace: 'default',
        userData: 'secret-ish',
        common: { cloudCredentialSecretName: 'cattle-global-data:cc' },
      },
      status: { cloudCredentialSecretName: 'cattle-global-data:old', conditions: [] },
    } as never);
    assert.deepEqual(slim, {
      kind: 'HarvesterMachine',
      metadata: { name: 'm', namespace: 'n', uid: 'u', labels: { a: 'b' } },
      spec: { vmNamespace: 'default', common: { cloudCredentialSecretName: 'cattle-global-data:cc' } },
      status: { cloudCredentialSecretName: 'cattle-global-data:old' },
    });
  });
  it('keeps the hook annotation and infrastructure reference of a Machine', () => {
    const slim = slimMachine({
      metadata: { name: 'm', annotations: { h: 'x' } },
      spec: { clusterName: 'c', infrastructureRef: { kind: 'HarvesterMachine', name: 'm' }, bootstrap: {} },
      status: {},
    } as never);
    assert.deepEqual(slim, {
      metadata: { name: 'm', annotations: { h: 'x' } },
      spec: { clusterName: 'c', infrastructureRef: { kind: 'HarvesterMachine', name: 'm' } },
    });
  });
  it('keeps no data of a Secret that is not a Harvester credential', () => {
    assert.deepEqual(slimSecret({ metadata: { name: 's' }, data: { token: 'x' } } as never), {
      metadata: { name: 's' },
    });
    const kept = slimSecret({
      metadata: { name: 'cc', annotations: { 'rancher.io/expiration-timestamp': '1', other: '2' } },
      data: { 'harvestercredentialConfig-kubeconfigContent': 'eA==', other: 'y' },
    } as never);
    assert.deepEqual(kept, {
      metadata: { name: 'cc', annotations: { 'rancher.io/expiration-timestamp': '1' } },
      data: { 'harvestercredentialConfig-kubeconfigContent': 'eA==' },
    });
  });
});
