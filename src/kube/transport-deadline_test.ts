// A request's deadline covers getting its credential: an exec plugin (the operator's own
// kubeconfig may run one) that does not answer fails the request as a Timeout within the
// deadline, and nothing is sent. Before, the credential was awaited first and the deadline
// started only with the request: a plugin that never exits stalled its caller for good.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { KubeClient } from './client.js';
import { KubeError } from './errors.js';
import { Resources } from './resources.js';
import { setTripwires, type Tripwires } from './testing/tripwires.js';

let wires: Tripwires;
let dir = '';
before(async () => {
  wires = await setTripwires();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-deadline-'));
});
after(async () => {
  await wires.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the request deadline', () => {
  it('covers an exec plugin that does not answer: Timeout within the deadline, nothing sent', async () => {
    const plugin = path.join(dir, 'slow-plugin');
    // Exits by itself after 2 s, so the test leaves no process behind.
    fs.writeFileSync(plugin, '#!/bin/sh\nexec sleep 2\n', { mode: 0o755 });
    const kubeconfig = stringify({
      clusters: [{ name: 'h', cluster: { server: wires.url, 'insecure-skip-tls-verify': true } }],
      users: [
        { name: 'h', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin } } },
      ],
      contexts: [{ name: 'h', context: { cluster: 'h', user: 'h' } }],
      'current-context': 'h',
    });
    const client = KubeClient.fromKubeconfig(kubeconfig, {
      trust: 'operator',
      requestTimeoutMs: 300,
      retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
    });
    const started = performance.now();
    try {
      await assert.rejects(
        client.get(Resources.namespace, { name: 'default' }),
        (err: unknown) =>
          err instanceof KubeError &&
          err.kind === 'Timeout' &&
          /no credential .* within 300 ms/.test(err.message),
      );
      const took = performance.now() - started;
      assert.ok(took < 1_500, `failed after ${Math.round(took)} ms`);
      assert.equal(wires.connections(), 0, 'nothing sent');
    } finally {
      client.close();
    }
  });
});
