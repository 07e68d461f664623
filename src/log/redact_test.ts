import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { clearRegisteredSecrets, redact, registerSecret } from './redact.js';

const REDACTED = '[REDACTED]';

describe('redact: registered secrets', () => {
  afterEach(() => clearRegisteredSecrets());

  it('redacts a secret whole when a shorter registered secret is part of it', () => {
    registerSecret('Zq8w7e6r5t4y3u2i');
    registerSecret('Zq8w7e6r5t4y3u2i-and-the-rest-of-a-longer-one');
    assert.equal(redact('x Zq8w7e6r5t4y3u2i-and-the-rest-of-a-longer-one y'), `x ${REDACTED} y`);
    assert.equal(redact('x Zq8w7e6r5t4y3u2i y'), `x ${REDACTED} y`);
  });
});
