import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lbOwnership } from './lb-ownership.js';
import { cloudProviderClusterName } from '../../rancher/chart-values.js';
import { slimCluster } from '../common/cache-transforms.js';

const c = (name: string, lbClusterName?: string, namespace = 'fleet-default') => ({
  namespace,
  name,
  lbClusterName,
});

describe('lbOwnership: the load balancers labelled with a cluster name are its own only when certain', () => {
  it('is certain for a cluster named by its chart values, or with none, that no other cluster uses', () => {
    assert.deepEqual(lbOwnership(c('a', 'a'), [c('a', 'a'), c('b', 'b')]), { certain: true });
    assert.deepEqual(lbOwnership(c('a'), [c('a'), c('b', 'b'), c('c')]), { certain: true });
  });
  it('refuses when another cluster, deleted or not, in any watched namespace, gives its cloud provider the same name', () => {
    const o = lbOwnership(c('a', 'a'), [c('a', 'a'), c('b', 'a'), c('a', 'a', 'fleet-other')]);
    assert.equal(o.certain, false);
    assert.ok(!o.certain && o.others.join() === 'fleet-default/b,fleet-other/a', JSON.stringify(o));
    assert.match(
      !o.certain ? o.reason : '',
      /guest clusters fleet-default\/b, fleet-other\/a also label their load balancers "a"/,
    );
  });
  it('refuses when its own chart values name another cluster, and for the cloud provider’s default names', () => {
    const own = lbOwnership(c('b', 'a'), [c('a', 'a'), c('b', 'a')]);
    assert.match(
      !own.certain ? own.reason : '',
      /gives? Harvester's cloud provider the cluster name "a" .*not "b"/,
    );
    for (const name of ['kubernetes', ''])
      assert.match(
        (() => {
          const o = lbOwnership(c(name), []);
          return o.certain ? '' : o.reason;
        })(),
        /what the cloud provider uses without --cluster-name/,
      );
  });
});

describe('the chart value', () => {
  const cluster = (chartValues: unknown) => ({
    metadata: { name: 'a' },
    spec: { rkeConfig: { chartValues } },
  });
  it('is read from harvester-cloud-provider global.cattle.clusterName, and kept alone by the cache', () => {
    const full = cluster({
      'harvester-cloud-provider': {
        global: { cattle: { clusterName: 'a', clusterId: 'c-m-1' } },
        cloudConfigPath: '/x',
      },
      'rke2-calico': { big: 'x'.repeat(1000) },
    });
    assert.equal(cloudProviderClusterName(full), 'a');
    const slim = slimCluster(full) as never;
    assert.deepEqual((slim as { spec: unknown }).spec, {
      cloudCredentialSecretName: null,
      rkeConfig: {
        chartValues: { 'harvester-cloud-provider': { global: { cattle: { clusterName: 'a' } } } },
      },
    });
    assert.equal(cloudProviderClusterName(slim), 'a');
  });
  it('is undefined when not set or not a string', () => {
    assert.equal(cloudProviderClusterName(cluster(undefined)), undefined);
    assert.equal(
      cloudProviderClusterName(
        cluster({ 'harvester-cloud-provider': { global: { cattle: { clusterName: 7 } } } }),
      ),
      undefined,
    );
    assert.equal(cloudProviderClusterName(cluster('nonsense')), undefined);
  });
});
