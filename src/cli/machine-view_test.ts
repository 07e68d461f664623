import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GO_CONFIG_JSON } from '../harvester/testing/fixtures.js';
import { FAKE_TOKEN_SECRET, rancherKubeconfig } from '../kube/testing/kubeconfig.js';
import { hostConfigFor } from './store/host-config.js';
import { describeFixedAddress, describeSavedCredential, redactedHost, summarize } from './machine-view.js';

describe('machine view', () => {
  it('summarizes a saved machine and describes its credential without its secret', () => {
    const driver = {
      ...(JSON.parse(GO_CONFIG_JSON) as Record<string, unknown>),
      KubeConfigContent: rancherKubeconfig(),
      SSHPassword: 'hunter2-hunter2',
    };
    const host = hostConfigFor('mycluster-pool1-7f8d9c5b6-x2v9q', JSON.stringify(driver));
    const summary = summarize(host);
    assert.equal(summary.vm, 'default/mycluster-pool1-7f8d9c5b6-x2v9q');
    assert.equal(summary.clusterName, 'mycluster');
    assert.equal(summary.ip, '10.52.0.17');
    assert.deepEqual(summary.credential, {
      server: 'https://rancher.example.test/k8s/clusters/c-m-abcd1234',
      identity: 'Rancher token kubeconfig-u-abc12',
      expiresAt: null,
    });
    const shown = JSON.stringify(redactedHost(host));
    assert.ok(!shown.includes(FAKE_TOKEN_SECRET));
    assert.ok(!shown.includes('hunter2'));
    assert.equal(redactedHost(host).Driver['KubeConfigContent'], '[REDACTED]');
  });

  it('says where the IP came from: the fixed address and its holder, or the guest agent', () => {
    const fixed = {
      address: '192.168.100.10',
      prefix: 24,
      interface: 'nic-0',
      mac: '02:00:00:00:00:01',
      network: 'default/vlan100',
      source: 'pool',
      holder: 'hm-ip-0123456789-192-168-100-10',
    };
    const driver = {
      ...(JSON.parse(GO_CONFIG_JSON) as Record<string, unknown>),
      IPAddress: '192.168.100.10',
    };
    const withPool = summarize(
      hostConfigFor('m', JSON.stringify({ ...driver, HarvesterMachine: { FixedAddress: fixed } })),
    );
    assert.equal(withPool.addressSource, 'pool');
    assert.deepEqual(withPool.fixedAddress, fixed);
    assert.equal(
      describeFixedAddress(withPool.fixedAddress ?? { ...fixed, source: 'pool' }),
      '192.168.100.10/24 on nic-0 of default/vlan100 (MAC 02:00:00:00:00:01), claimed as ConfigMap hm-ip-0123456789-192-168-100-10',
    );
    const plain = summarize(hostConfigFor('m', JSON.stringify(driver)));
    assert.equal(plain.addressSource, 'guest-agent');
    assert.equal(plain.fixedAddress, null);
    assert.equal(
      summarize(hostConfigFor('m', JSON.stringify({ ...driver, IPAddress: '' }))).addressSource,
      '',
    );
  });

  it('reports an unusable saved kubeconfig instead of failing', () => {
    assert.ok('error' in describeSavedCredential('not: [a kubeconfig'));
    assert.ok('error' in describeSavedCredential(''));
  });
});
