// Rancher-side helpers: tokens as Rancher stores them (hashed, labelled, expiresAt from the
// server's creationTimestamp), the kubeconfig generateKubeconfig returns, and the Harvester
// cloud credential Secret.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { KubeConfig } from '@kubernetes/client-node';
import { Resources } from '../../src/kube/resources.js';
import { redact } from '../../src/log/redact.js';
import { useControlPlane } from '../../test/support/control-plane-fixture.js';
import {
  ANNOTATION_CREDENTIAL_EXPIRATION,
  CREDENTIAL_KEY_CLUSTER_ID,
  CREDENTIAL_KEY_KUBECONFIG,
} from '../../src/rancher/cloud-credential.js';
import {
  clusterIdFromKubeconfig,
  harvesterCloudCredential,
  rancherKubeconfig,
  saveHarvesterCloudCredential,
  type SecretObject,
} from './credentials.js';
import { RancherResources, isTokenExpired, type RancherTokenObject } from './resources.js';
import {
  TOKEN_HASHED_ANNOTATION,
  hashTokenSecret,
  tokenSecretMatches,
  verifyTokenSecret,
} from './token-hash.js';
import { createRancherToken, expireRancherToken, extendRancherToken, newRancherUserId } from './tokens.js';

const CA = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';

describe('token secrets', () => {
  it('hashes as Rancher’s SHA3 hasher does and verifies only the right secret', () => {
    const hash = hashTokenSecret('s3cret-value-0123456789');
    assert.match(hash, /^\$3:1:[A-Za-z0-9+/]{11}:[A-Za-z0-9+/]{86}$/);
    assert.equal(verifyTokenSecret(hash, 's3cret-value-0123456789'), true);
    assert.equal(verifyTokenSecret(hash, 's3cret-value-0123456788'), false);
    assert.equal(verifyTokenSecret('$9:bogus', 'x'), false);
    assert.notEqual(hashTokenSecret('same'), hashTokenSecret('same'), 'salted');
  });

  it('compares plain secrets only when the token is not marked hashed', () => {
    const plain = { token: 'abc', metadata: {} };
    assert.equal(tokenSecretMatches(plain, 'abc'), true);
    const hashed = { token: 'abc', metadata: { annotations: { [TOKEN_HASHED_ANNOTATION]: 'true' } } };
    assert.equal(tokenSecretMatches(hashed, 'abc'), false);
  });
});

describe('kubeconfig and cloud credential', () => {
  const token = 'kubeconfig-u-b4x7kq2z9m:' + 'k'.repeat(54);
  const kubeconfig = rancherKubeconfig({
    proxyUrl: 'https://127.0.0.1:9443/',
    clusterId: 'c-m-abc',
    caPem: CA,
    token,
  });

  it('is the kubeconfig generateKubeconfig returns, readable by client-node', () => {
    const doc = parse(kubeconfig) as Record<string, unknown>;
    assert.equal(doc['current-context'], 'c-m-abc');
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig);
    assert.equal(kc.getCurrentCluster()?.server, 'https://127.0.0.1:9443/k8s/clusters/c-m-abc');
    assert.equal(kc.getCurrentUser()?.token, token);
    assert.equal(Buffer.from(kc.getCurrentCluster()?.caData ?? '', 'base64').toString(), CA);
    assert.equal(clusterIdFromKubeconfig(kubeconfig), 'c-m-abc');
    assert.doesNotMatch(redact(kubeconfig), /k{54}/, 'its token is registered for redaction');
  });

  it('is kept in cattle-global-data with the expiry annotation in Unix ms', () => {
    const expiresAt = new Date('2030-01-02T03:04:05Z');
    const secret = harvesterCloudCredential({ name: 'cc-test', kubeconfig, expiresAt });
    assert.equal(secret.metadata.namespace, 'cattle-global-data');
    assert.equal(secret.type, 'provisioning.cattle.io/cloud-credential');
    assert.equal(
      secret.metadata.annotations?.[ANNOTATION_CREDENTIAL_EXPIRATION],
      String(expiresAt.getTime()),
    );
    const data = secret.data ?? {};
    assert.equal(Buffer.from(data[CREDENTIAL_KEY_KUBECONFIG] ?? '', 'base64').toString(), kubeconfig);
    assert.equal(Buffer.from(data[CREDENTIAL_KEY_CLUSTER_ID] ?? '', 'base64').toString(), 'c-m-abc');
    assert.equal(
      Buffer.from(data['harvestercredentialConfig-clusterType'] ?? '', 'base64').toString(),
      'imported',
    );
    const never = harvesterCloudCredential({ name: 'cc-never', kubeconfig });
    assert.equal(never.metadata.annotations?.[ANNOTATION_CREDENTIAL_EXPIRATION], undefined);
  });
});

describe('tokens in Rancher’s local cluster', () => {
  const fixture = useControlPlane({ name: 'rancher-helpers', crds: 'rancher', controllerManager: false });

  it('stores a hashed, labelled token whose expiresAt is creationTimestamp + ttl', async () => {
    const admin = fixture.cp.admin;
    const userId = newRancherUserId();
    const created = await createRancherToken(admin, { userId, ttlMs: 90_000, clusterId: 'c-m-abc' });
    const [name, secret] = created.token.split(':');
    assert.equal(name, created.name);
    assert.match(created.name, new RegExp(`^kubeconfig-${userId}[a-z0-9]{5}$`));
    assert.equal(secret?.length, 54);
    const stored = await admin.get<RancherTokenObject>(RancherResources.token, { name: created.name });
    assert.notEqual(stored.token, secret, 'the secret itself is not stored');
    assert.equal(tokenSecretMatches(stored, secret ?? ''), true);
    assert.equal(stored.userId, userId);
    assert.equal(stored.ttl, 90_000);
    assert.equal(stored.metadata.labels?.['authn.management.cattle.io/kind'], 'kubeconfig');
    assert.equal(stored.metadata.labels?.['authn.management.cattle.io/token-userId'], userId);
    const expected = Date.parse(stored.metadata.creationTimestamp ?? '') + 90_000;
    assert.equal(Date.parse(stored.expiresAt ?? ''), expected);
    assert.equal(created.expiresAt?.getTime(), expected);
    assert.ok(await admin.find(RancherResources.user, { name: userId }), 'the user exists');

    const expiredAt = await expireRancherToken(admin, created.name);
    const expired = await admin.get<RancherTokenObject>(RancherResources.token, { name: created.name });
    assert.equal(isTokenExpired(expired), true);
    assert.equal(expired.expired, true);
    assert.ok(expiredAt.getTime() <= Date.now());

    assert.equal(await extendRancherToken(admin, created.name, { ttlMs: 0 }), undefined);
    const forever = await admin.get<RancherTokenObject>(RancherResources.token, { name: created.name });
    assert.equal(isTokenExpired(forever), false);
    assert.equal(forever.expiresAt, '');
  });

  it('saves a cloud credential, then replaces its kubeconfig in place (Renew)', async () => {
    const admin = fixture.cp.admin;
    const first = harvesterCloudCredential({
      name: 'cc-renew',
      kubeconfig: 'apiVersion: v1\n',
      expiresAt: new Date(1),
    });
    await saveHarvesterCloudCredential(admin, first);
    const second = harvesterCloudCredential({
      name: 'cc-renew',
      kubeconfig: 'apiVersion: v1\nkind: Config\n',
    });
    await saveHarvesterCloudCredential(admin, second);
    const stored = await admin.get<SecretObject>(Resources.secret, {
      namespace: 'cattle-global-data',
      name: 'cc-renew',
    });
    assert.equal(
      Buffer.from(stored.data?.[CREDENTIAL_KEY_KUBECONFIG] ?? '', 'base64').toString(),
      'apiVersion: v1\nkind: Config\n',
    );
    assert.equal(stored.metadata.annotations?.[ANNOTATION_CREDENTIAL_EXPIRATION], undefined);
  });
});
