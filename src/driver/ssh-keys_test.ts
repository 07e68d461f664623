import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { rancherKubeconfig } from '../kube/testing/kubeconfig.js';
import { silentLogger } from '../log/logger.js';
import { defaultFlagValues } from './config/flags.js';
import { HarvesterDriver } from './harvester-driver.js';
import { generateSshKeyPairInBackground, rsaPublicKeyToOpenSsh, type SshKeyPair } from './ssh-keys.js';

describe('SSH key pairs for Create', () => {
  it('are made off the event loop: timers and requests go on while the key is generated', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    try {
      const pair = await generateSshKeyPairInBackground();
      assert.ok(ticks > 0, 'the event loop was blocked while the key was made');
      const derived = rsaPublicKeyToOpenSsh(crypto.createPublicKey(pair.privateKeyPem));
      assert.equal(pair.publicKey, derived, 'the public key is the private key’s');
      assert.match(pair.privateKeyPem, /^-----BEGIN RSA PRIVATE KEY-----/);
    } finally {
      clearInterval(timer);
    }
  });

  it('are started by PreCreateCheck, and the Create that follows writes that pair', async () => {
    const store = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-ssh-key-'));
    try {
      const name = 'mycluster-pool1-7f8d9c5b6-x2v9q';
      fs.mkdirSync(path.join(store, 'machines', name), { recursive: true });
      const made: SshKeyPair[] = [];
      let started = 0;
      const driver = new HarvesterDriver({
        logger: silentLogger,
        env: {},
        // Nothing listens there: every request fails at once, after the key is handled.
        clientOptions: { retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 } },
        newSshKey: async () => {
          started++;
          const pair = await generateSshKeyPairInBackground();
          made.push(pair);
          return pair;
        },
      });
      driver.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: name, StorePath: store })));
      const values = defaultFlagValues();
      const kubeconfig = rancherKubeconfig({ server: 'https://127.0.0.1:1' });
      values.set('harvester-kubeconfig-content', Buffer.from(kubeconfig).toString('base64'));
      values.set('harvester-cluster-name', 'mycluster');
      values.set('harvester-image-name', 'default/image-abc12');
      values.set('harvester-disk-size', 40);
      values.set('harvester-network-name', 'default/vlan1');
      values.set('harvester-ssh-user', 'ubuntu');
      driver.setConfigFromFlags(values);

      const checked = driver.preCreateCheck();
      assert.equal(started, 1, 'PreCreateCheck starts the key pair for the Create that follows');
      await checked.catch(() => undefined); // Harvester unreachable: the check fails
      await new Promise((r) => setTimeout(r, 0));
      await driver.create().catch(() => undefined); // fails at its first request
      assert.equal(started, 1, 'Create made no second pair');
      assert.equal(made.length, 1);
      const written = fs.readFileSync(path.join(store, 'machines', name, 'id_rsa.pub'), 'utf8');
      assert.equal(written.trim().split(' ').slice(0, 2).join(' '), made[0]?.publicKey);
    } finally {
      fs.rmSync(store, { recursive: true, force: true });
    }
  });
});
