import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import {
  clearRegisteredSecrets,
  redact,
  registeredSecretCount,
  registerSecret,
  SecretRegistration,
} from './redact.js';

const REDACTED = '[REDACTED]';
const b64url = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
const JWT = [
  b64url({ alg: 'RS256', kid: 'k1' }),
  b64url({ iss: 'kubernetes/serviceaccount', sub: 'system:serviceaccount:kube-system:deployer' }),
  'c2lnbmF0dXJlLW9mLXRoZS10b2tlbg',
].join('.');

describe('redact: patterns', () => {
  it('redacts a bare JWT (a service-account token outside any field or header)', () => {
    assert.equal(redact(`token was ${JWT} (expired)`), `token was ${REDACTED} (expired)`);
    assert.equal(redact(`"${JWT}"`), `"${REDACTED}"`);
  });

  it('redacts Basic credentials, in a header or alone, keeping the scheme', () => {
    const basic = Buffer.from('admin:s3cret-password').toString('base64');
    assert.equal(redact(`Authorization: Basic ${basic}`), `Authorization: Basic ${REDACTED}`);
    assert.equal(redact(`{"authorization":"Basic ${basic}"}`), `{"authorization":"Basic ${REDACTED}"}`);
    assert.equal(redact(`sent Basic ${basic} to the proxy`), `sent Basic ${REDACTED} to the proxy`);
    assert.equal(redact('authorization: opaque-value-123'), `authorization: ${REDACTED}`);
  });

  it('leaves ordinary words alone', () => {
    for (const text of [
      'Basic authentication is not configured',
      'basic auth kind',
      'the header Authorization is missing',
      'eyJ is how a JSON object begins in base64',
    ]) {
      assert.equal(redact(text), text);
    }
  });
});

describe('redact: registered secrets', () => {
  afterEach(() => clearRegisteredSecrets());

  it('redacts a secret whole when a shorter registered secret is part of it', () => {
    registerSecret('Zq8w7e6r5t4y3u2i');
    registerSecret('Zq8w7e6r5t4y3u2i-and-the-rest-of-a-longer-one');
    assert.equal(redact('x Zq8w7e6r5t4y3u2i-and-the-rest-of-a-longer-one y'), `x ${REDACTED} y`);
    assert.equal(redact('x Zq8w7e6r5t4y3u2i y'), `x ${REDACTED} y`);
  });

  it('a registration collects what is registered while it runs, and drops it on release', () => {
    const registration = new SecretRegistration();
    const value = registration.collect(() => {
      registerSecret('credential-version-1-secret');
      return 42;
    });
    assert.equal(value, 42);
    assert.equal(redact('a credential-version-1-secret b'), `a ${REDACTED} b`);
    registration.release();
    assert.equal(redact('a credential-version-1-secret b'), 'a credential-version-1-secret b');
    registration.release(); // twice is harmless
  });

  it('a secret held by a registration and by another holder stays until the last lets go', () => {
    registerSecret('process-lifetime-secret-1');
    const a = new SecretRegistration();
    const b = new SecretRegistration();
    a.collect(() => registerSecret('process-lifetime-secret-1'));
    a.collect(() => registerSecret('shared-by-two-versions'));
    b.collect(() => registerSecret('shared-by-two-versions'));
    a.release();
    assert.equal(redact('process-lifetime-secret-1'), REDACTED, 'registered for the process');
    assert.equal(redact('shared-by-two-versions'), REDACTED, 'still held by b');
    b.release();
    assert.equal(redact('shared-by-two-versions'), 'shared-by-two-versions');
  });

  it('stays bounded when a credential is renewed again and again', () => {
    const before = registeredSecretCount();
    let current: SecretRegistration | undefined;
    for (let version = 0; version < 1_000; version++) {
      const next = new SecretRegistration();
      next.collect(() =>
        registerSecret(
          `apiVersion: v1\nusers:\n- user:\n    token: kubeconfig-u-abc12:secret${version}xxxxxxxxxxxx\n`,
        ),
      );
      current?.release();
      current = next;
    }
    assert.ok(registeredSecretCount() - before <= 3, `${registeredSecretCount() - before} secrets held`);
    current?.release();
    assert.equal(registeredSecretCount(), before);
  });

  it('refuses an asynchronous function (what it registers later would escape)', () => {
    const registration = new SecretRegistration();
    assert.throws(() => registration.collect(() => Promise.resolve(1)), /synchronous/);
  });
});
