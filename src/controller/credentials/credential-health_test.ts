import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyCredential, findCredentialMismatches, type CredentialState } from './credential-health.js';

const now = new Date('2025-06-01T00:00:00Z');
const DAY = 86_400_000;
const soon = 7 * DAY;

describe('classifyCredential', () => {
  const at = (ms: number) => new Date(now.getTime() + ms);
  it('believes the probe over the annotation', () => {
    assert.equal(
      classifyCredential({ expiresAt: at(30 * DAY), probe: 'rejected', now, expiringSoonMs: soon }).state,
      'rejected',
    );
    assert.equal(
      classifyCredential({ expiresAt: at(-DAY), probe: 'rejected', now, expiringSoonMs: soon }).state,
      'expired',
    );
    assert.equal(
      classifyCredential({ expiresAt: at(-DAY), probe: 'ok', now, expiringSoonMs: soon }).state,
      'valid',
    );
  });
  it('says what is wrong with a kubeconfig that cannot be used, whatever the annotation says', () => {
    const h = classifyCredential({
      expiresAt: at(30 * DAY),
      probe: 'invalid',
      problem: 'kubeconfig has no current-context',
      now,
      expiringSoonMs: soon,
    });
    assert.equal(h.state, 'invalid');
    assert.equal(h.detail, 'cannot be used: kubeconfig has no current-context');
  });
  it('uses the annotation when the probe could not decide', () => {
    assert.equal(
      classifyCredential({ expiresAt: at(-1), probe: 'unreachable', now, expiringSoonMs: soon }).state,
      'expired',
    );
    assert.equal(
      classifyCredential({ expiresAt: at(DAY), probe: 'not-probed', now, expiringSoonMs: soon }).state,
      'expiring-soon',
    );
    assert.equal(
      classifyCredential({ expiresAt: at(DAY), probe: 'ok', now, expiringSoonMs: soon }).state,
      'expiring-soon',
    );
    assert.equal(
      classifyCredential({ expiresAt: at(30 * DAY), probe: 'not-probed', now, expiringSoonMs: soon }).state,
      'valid',
    );
    assert.equal(
      classifyCredential({ expiresAt: undefined, probe: 'unreachable', now, expiringSoonMs: soon }).state,
      'unknown',
    );
    assert.equal(
      classifyCredential({ expiresAt: undefined, probe: 'ok', now, expiringSoonMs: soon }).state,
      'valid',
    );
  });
});

describe('findCredentialMismatches', () => {
  const ref = (name: string) => ({ namespace: 'cattle-global-data', name });
  const states: Record<string, { state: CredentialState; harvesterClusterId?: string }> = {
    'cc-new': { state: 'valid', harvesterClusterId: 'c-m-1' },
    'cc-old': { state: 'expired', harvesterClusterId: 'c-m-1' },
    'cc-other': { state: 'expired', harvesterClusterId: 'c-m-2' },
  };
  const lookup = (r: { name: string }) => states[r.name];
  const cluster = { namespace: 'fleet-default', name: 'c1' };
  it('reports an expired pool/machine credential beside a valid cluster one for the same Harvester, with commands', () => {
    const r = findCredentialMismatches({
      clusterCredential: ref('cc-new'),
      references: [
        { referrer: 'machine pool p of fleet-default/c1', cluster, credential: ref('cc-old'), poolIndex: 1 },
        { referrer: 'HarvesterMachine fleet-default/m', cluster, credential: ref('cc-other') },
      ],
      lookup,
    });
    assert.equal(r.length, 1);
    assert.equal(r[0]?.expired.name, 'cc-old');
    assert.match(r[0]?.fix ?? '', /Renew cloud credential cattle-global-data:cc-old/);
    assert.match(r[0]?.fix ?? '', /patch secret cc-old/);
    assert.match(
      r[0]?.fix ?? '',
      /machinePools\/1\/cloudCredentialSecretName","value":"cattle-global-data:cc-new"/,
    );
  });
  it('reports nothing when the cluster credential is not known to be valid', () => {
    const r = findCredentialMismatches({
      clusterCredential: ref('cc-old'),
      references: [{ referrer: 'x', cluster, credential: ref('cc-old') }],
      lookup,
    });
    assert.deepEqual(r, []);
  });
});
