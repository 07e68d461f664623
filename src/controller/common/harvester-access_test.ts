// The controller's clients per credential Secret version, and the secrets registered for
// redaction with each: released when the version is replaced or the Secret deleted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redact, registeredSecretCount } from '../../log/redact.js';
import { CREDENTIAL_KEY_KUBECONFIG } from '../../rancher/cloud-credential.js';
import { HarvesterClients } from './harvester-access.js';
import type { SecretObject } from './types.js';

const tokenOf = (version: number): string => `opaque-harvester-token-of-version-${version}-x`;

function credential(version: number, kubeconfig = true): SecretObject {
  const content = [
    'apiVersion: v1',
    'kind: Config',
    'clusters: [{name: h, cluster: {server: "https://127.0.0.1:1"}}]',
    `users: [{name: u, user: {token: ${tokenOf(version)}}}]`,
    'contexts: [{name: h, context: {cluster: h, user: u}}]',
    'current-context: h',
  ].join('\n');
  return {
    metadata: { namespace: 'cattle-global-data', name: 'cc-abc12', resourceVersion: String(version) },
    data: kubeconfig ? { [CREDENTIAL_KEY_KUBECONFIG]: Buffer.from(content).toString('base64') } : {},
  };
}

describe('HarvesterClients: the secrets of each credential version', () => {
  it('holds the current version’s secrets only, however often the credential is renewed', () => {
    const clients = new HarvesterClients();
    const before = registeredSecretCount();
    clients.forSecret(credential(1));
    const perVersion = registeredSecretCount() - before;
    assert.ok(perVersion > 0);
    assert.equal(redact(`t=${tokenOf(1)}`), 't=[REDACTED]');
    for (let v = 2; v <= 200; v++) clients.forSecret(credential(v));
    assert.equal(registeredSecretCount() - before, perVersion);
    assert.equal(redact(`t=${tokenOf(200)}`), 't=[REDACTED]');
    assert.equal(redact(`t=${tokenOf(1)}`), `t=${tokenOf(1)}`, 'version 1 is gone: no longer registered');
    clients.forget('cattle-global-data/cc-abc12');
    assert.equal(registeredSecretCount(), before);
  });

  it('the same version reuses its client and registers nothing more', () => {
    const clients = new HarvesterClients();
    const first = clients.forSecret(credential(7));
    const count = registeredSecretCount();
    assert.equal(clients.forSecret(credential(7)), first);
    assert.equal(registeredSecretCount(), count);
    clients.closeAll();
  });

  it('a version whose content makes no client keeps its secrets until it is replaced', () => {
    const clients = new HarvesterClients();
    const before = registeredSecretCount();
    const broken = credential(3);
    const text = Buffer.from(broken.data?.[CREDENTIAL_KEY_KUBECONFIG] ?? '', 'base64').toString();
    broken.data = {
      [CREDENTIAL_KEY_KUBECONFIG]: Buffer.from(
        text.replace('current-context: h', 'current-context: ['),
      ).toString('base64'),
    };
    for (let i = 0; i < 5; i++) assert.throws(() => clients.forSecret(broken));
    assert.ok(registeredSecretCount() > before, 'registered while current');
    const afterFailures = registeredSecretCount();
    clients.forSecret(credential(4, false));
    assert.ok(registeredSecretCount() < afterFailures);
    assert.equal(registeredSecretCount(), before);
  });
});
