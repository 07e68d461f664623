import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LABEL_GUEST_CLUSTER_NAME } from './labels.js';
import {
  LB_LABEL_CLUSTER,
  LB_LABEL_SERVICE_NAME,
  LB_LABEL_SERVICE_NAMESPACE,
  decideLoadBalancerCleanup,
  describeLoadBalancer,
  findLeftoverLoadBalancers,
  harvesterLbCleanup,
  loadBalancersToDelete,
  type LoadBalancer,
  type VmLike,
} from './load-balancers.js';

const NOW = new Date('2026-09-01T12:00:00Z');
const HOUR_AGO = new Date(NOW.getTime() - 3_600_000).toISOString();

function lb(
  name: string,
  opts: {
    cluster?: string;
    namespace?: string;
    type?: string;
    deleting?: boolean;
    created?: string;
    ip?: string;
  } = {},
): LoadBalancer {
  return {
    metadata: {
      name,
      namespace: opts.namespace ?? 'default',
      uid: `uid-${name}`,
      creationTimestamp: opts.created ?? HOUR_AGO,
      labels: {
        ...(opts.cluster !== undefined ? { [LB_LABEL_CLUSTER]: opts.cluster } : {}),
        [LB_LABEL_SERVICE_NAMESPACE]: 'default',
        [LB_LABEL_SERVICE_NAME]: `svc-${name}`,
      },
      ...(opts.deleting ? { deletionTimestamp: HOUR_AGO } : {}),
    },
    spec: { workloadType: opts.type ?? 'cluster', ipam: 'pool' },
    ...(opts.ip ? { status: { address: opts.ip, allocatedAddress: { ip: opts.ip, ipPool: 'pool1' } } } : {}),
  };
}

const vm = (name: string, cluster: string, namespace = 'default', deleting = false): VmLike => ({
  metadata: {
    name,
    namespace,
    labels: { [LABEL_GUEST_CLUSTER_NAME]: cluster },
    ...(deleting ? { deletionTimestamp: HOUR_AGO } : {}),
  },
});

describe("harvesterLbCleanup: which Harvester deletes a deleted guest cluster's load balancers itself", () => {
  for (const [version, cleans] of [
    ['v1.8.0', true],
    ['v1.8.2', true],
    ['v1.9.0-rc1', true],
    ['1.10.0', true],
    ['v2.0.0', true],
    ['v1.7.3', false],
    ['v1.7.99', false],
    ['v1.8.0-rc6', false],
    ['v0.9.9', false],
    ['master-4eb0c1ac-head', false],
    [undefined, false],
  ] as const) {
    it(`${version ?? '(no server-version)'}: ${cleans ? 'cleans up' : 'leaves them'}`, () => {
      const verdict = harvesterLbCleanup(version);
      assert.equal(verdict.cleansUp, cleans);
      assert.match(verdict.why, cleans ? /deletes them itself/ : /leaves them/);
    });
  }
});

describe('decideLoadBalancerCleanup', () => {
  const mine = [
    lb('gc1-a', { cluster: 'gc1', ip: '10.0.0.10' }),
    lb('gc1-b', { cluster: 'gc1' }),
    lb('gc1-gone', { cluster: 'gc1', deleting: true }),
    lb('gc1-vm-type', { cluster: 'gc1', type: 'vm' }),
    lb('gc1-elsewhere', { cluster: 'gc1', namespace: 'other' }),
    lb('gc2-a', { cluster: 'gc2' }),
    lb('gc10-a', { cluster: 'gc10' }),
  ];
  const base = { cluster: 'gc1', namespace: 'default', loadBalancers: mine, serverVersion: 'v1.7.1' };

  it('deletes exactly the cluster-type load balancers of the cluster in the namespace once no VM of it is left', () => {
    const d = decideLoadBalancerCleanup({
      ...base,
      vms: [vm('gc2-m1', 'gc2'), vm('gc1-m9', 'gc1', 'other')],
    });
    assert.equal(d.action, 'delete');
    assert.deepEqual(d.action === 'delete' ? d.loadBalancers.map((l) => l.metadata.name) : [], [
      'gc1-a',
      'gc1-b',
    ]);
    assert.match(d.reason, /Harvester v1\.7\.1 leaves them/);
  });

  it('waits while any VM of the cluster is in the namespace, also one being deleted', () => {
    for (const vms of [[vm('gc1-m1', 'gc1')], [vm('gc1-m1', 'gc1', 'default', true)]]) {
      const d = decideLoadBalancerCleanup({ ...base, vms });
      assert.equal(d.action, 'wait');
      assert.match(d.reason, /still has 1 VM\(s\) in default \(default\/gc1-m1/);
    }
  });

  it("refuses the cloud provider's default cluster name, whatever is listed", () => {
    for (const cluster of ['kubernetes', '']) {
      const d = decideLoadBalancerCleanup({
        ...base,
        cluster,
        vms: [],
        loadBalancers: [lb('kubernetes-default-x', { cluster: 'kubernetes' })],
      });
      assert.equal(d.action, 'refuse');
    }
  });

  it('on Harvester v1.8.0 and later usually finds nothing left, and deletes what it left all the same', () => {
    const none = decideLoadBalancerCleanup({
      ...base,
      serverVersion: 'v1.8.0',
      vms: [],
      loadBalancers: [lb('gc1-gone', { cluster: 'gc1', deleting: true })],
    });
    assert.equal(none.action, 'none');
    assert.match(none.reason, /deletes them itself/);
    const left = decideLoadBalancerCleanup({ ...base, serverVersion: 'v1.8.1', vms: [] });
    assert.equal(left.action, 'delete');
    assert.match(left.reason, /Harvester did not delete them/);
  });
});

describe('findLeftoverLoadBalancers', () => {
  const lbs = [
    lb('dead-a', { cluster: 'dead', ip: '10.0.0.11' }),
    lb('dead-new', { cluster: 'dead', created: new Date(NOW.getTime() - 60_000).toISOString() }),
    lb('dead-going', { cluster: 'dead', deleting: true }),
    lb('live-a', { cluster: 'live' }),
    lb('dying-a', { cluster: 'dying' }),
    lb('vm-lb', { type: 'vm' }),
    lb('kubernetes-default-x', { cluster: 'kubernetes' }),
    lb('nolabel-x', { namespace: 'empty-ns' }),
  ];
  const vms = [vm('live-m1', 'live', 'elsewhere'), vm('dying-m1', 'dying', 'default', true)];

  it('lists load balancers of clusters without VMs by cluster, and nothing of a cluster with VMs anywhere', () => {
    const r = findLeftoverLoadBalancers(lbs, vms, { now: NOW, minAgeMs: 600_000 });
    assert.deepEqual(
      r.groups.map((g) => [g.cluster, g.loadBalancers.map((l) => l.name)]),
      [
        ['dead', ['dead-a']],
        [null, ['nolabel-x']],
      ],
    );
    assert.deepEqual(
      r.skipped.tooNew.map((s) => s.name),
      ['dead-new'],
    );
    assert.deepEqual(
      r.skipped.deleting.map((s) => s.name),
      ['dead-going'],
    );
    assert.deepEqual(r.skipped.liveCluster.map((s) => s.name).sort(), [
      'dying-a',
      'kubernetes-default-x',
      'live-a',
    ]);
    assert.match(
      r.skipped.liveCluster.find((s) => s.name === 'kubernetes-default-x')?.reason ?? '',
      /without a cluster name .* may be theirs/,
    );
    assert.equal(r.notConsidered, 1);
    assert.equal(r.groups[0]?.loadBalancers[0]?.address, '10.0.0.11 from IP pool pool1');
  });

  it("--delete takes the unknown cluster's only with --include-unknown", () => {
    const r = findLeftoverLoadBalancers(lbs, vms, { now: NOW, minAgeMs: 0 });
    assert.deepEqual(
      loadBalancersToDelete(r, false)
        .map((l) => l.name)
        .sort(),
      ['dead-a', 'dead-new'],
    );
    assert.deepEqual(
      loadBalancersToDelete(r, true)
        .map((l) => l.name)
        .sort(),
      ['dead-a', 'dead-new', 'nolabel-x'],
    );
  });
});

describe('describeLoadBalancer', () => {
  it('names its Service and the address it holds', () => {
    assert.equal(
      describeLoadBalancer(lb('gc1-a', { cluster: 'gc1', ip: '10.0.0.10' })),
      'default/gc1-a for Service default/svc-gc1-a holding 10.0.0.10 from IP pool pool1',
    );
  });
});
