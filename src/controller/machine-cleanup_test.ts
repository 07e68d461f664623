import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeError } from '../kube/errors.js';
import { describeFailure } from './machine-cleanup.js';

describe('describeFailure', () => {
  const now = Date.parse('2025-06-01T00:00:00Z');
  const secret = { metadata: { annotations: { 'rancher.io/expiration-timestamp': String(now - 60_000) } } };
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
