import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../kube/client.js';
import { KubeError } from '../../kube/errors.js';
import { CREDENTIAL_KEY_KUBECONFIG } from '../../rancher/cloud-credential.js';
import type { Cache } from '../common/caches.js';
import { HarvesterClients } from '../../harvester-access/clients.js';
import { attemptCleanup, describeFailure } from './machine-cleanup.js';
import type { CapiMachine, SecretObject } from '../common/types.js';

describe('describeFailure', () => {
  const now = Date.parse('2025-06-01T00:00:00Z');
  const secret = {
    metadata: { name: 'cc', annotations: { 'rancher.io/expiration-timestamp': String(now - 60_000) } },
  };
  it('says which credential was rejected, whose token, since when, and what to do', () => {
    const err = new KubeError('CredentialRejected', 'get vm', 'get vm: Unauthorized (HTTP 401)', {
      statusCode: 401,
      credential: { server: 'https://h', identity: 'Rancher token kubeconfig-u-abc' },
    });
    const f = describeFailure(err, 'cloud credential cattle-global-data:cc (cluster)', secret, now);
    assert.equal(f.reason, 'HarvesterCredentialRejected');
    assert.match(
      f.message,
      /cc \(cluster\), Rancher token kubeconfig-u-abc, expired at 2025-05-31T23:59:00.000Z: .*Renew/,
    );
  });
  it('tells an unreachable Harvester from other errors', () => {
    assert.equal(
      describeFailure(new KubeError('Unreachable', 'x', 'x'), 'l', undefined, now).reason,
      'HarvesterUnreachable',
    );
    assert.equal(
      describeFailure(new KubeError('Forbidden', 'x', 'x'), 'l', undefined, now).reason,
      'HarvesterError',
    );
    assert.equal(describeFailure(new Error('boom'), 'l', undefined, now).reason, 'HarvesterError');
  });
});

describe('attemptCleanup', () => {
  const machine = {
    metadata: { name: 'm1', namespace: 'fleet' },
    spec: { clusterName: 'c1', infrastructureRef: {} },
  } as CapiMachine;
  const harvesterMachine = { metadata: { name: 'm1', namespace: 'fleet' }, spec: { vmNamespace: 'vms' } };
  const cluster = {
    metadata: { name: 'c1', namespace: 'fleet' },
    spec: { cloudCredentialSecretName: 'cattle-global-data:cc-1' },
  };
  const secret: SecretObject = {
    metadata: { name: 'cc-1', namespace: 'cattle-global-data', resourceVersion: '1' },
    data: { [CREDENTIAL_KEY_KUBECONFIG]: Buffer.from('apiVersion: v1\nkind: Config\n').toString('base64') },
  };
  const deps = (forSecret: () => KubeClient | undefined) => ({
    credentials: { get: () => secret } as unknown as Cache<SecretObject>,
    harvester: { forSecret } as unknown as HarvesterClients,
    onCredentialRejected: () => undefined,
    now: 0,
  });
  const input = { machine, harvesterMachine, cluster, clusterName: 'c1' };

  it('reports an unusable kubeconfig as HarvesterCredentialInvalid, naming the Secret and the problem', async () => {
    const outcome = await attemptCleanup(
      deps(() => new HarvesterClients().forSecret(secret)),
      input,
      5_000,
    );
    assert.equal(outcome.kind, 'failed');
    assert.equal(outcome.kind === 'failed' && outcome.reason, 'HarvesterCredentialInvalid');
    assert.match(
      outcome.kind === 'failed' ? outcome.message : '',
      /^cloud credential cattle-global-data:cc-1 \(cluster\) cannot be used: its kubeconfig has no current-context\./,
    );
  });
  it('turns anything thrown into a failure, and ends a silent attempt when its time is up', async () => {
    const thrown = await attemptCleanup(
      deps(() => {
        throw new TypeError('boom');
      }),
      input,
      5_000,
    );
    assert.equal(thrown.kind === 'failed' && thrown.reason, 'HarvesterError');
    const silent = {
      find: () => new Promise(() => undefined),
    } as unknown as KubeClient;
    const started = Date.now();
    const timedOut = await attemptCleanup(
      deps(() => silent),
      input,
      50,
    );
    assert.equal(timedOut.kind === 'failed' && timedOut.reason, 'HarvesterUnreachable');
    assert.ok(Date.now() - started < 2_000);
  });
});
