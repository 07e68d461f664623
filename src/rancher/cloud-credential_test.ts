import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expiryFromAnnotation, harvesterClusterId, type CloudCredentialSecret } from './cloud-credential.js';

const now = new Date('2025-06-01T00:00:00Z');

describe('expiryFromAnnotation', () => {
  it('reads Unix milliseconds and ignores anything else', () => {
    const s = (v?: string): CloudCredentialSecret => ({
      metadata: { annotations: v === undefined ? {} : { 'rancher.io/expiration-timestamp': v } },
    });
    assert.equal(expiryFromAnnotation(s(String(now.getTime())))?.toISOString(), now.toISOString());
    assert.equal(expiryFromAnnotation(s('2025-06-01')), undefined);
    assert.equal(expiryFromAnnotation(s()), undefined);
  });
  it('decodes the Harvester cluster id', () => {
    const id = Buffer.from('c-m-abc').toString('base64');
    assert.equal(
      harvesterClusterId({ metadata: {}, data: { 'harvestercredentialConfig-clusterId': id } }),
      'c-m-abc',
    );
  });
});
