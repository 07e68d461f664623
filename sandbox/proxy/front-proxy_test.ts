// The front proxy's forwarding and Rancher's front door, against real control planes:
// the caller's own credential reaches the apiserver; Rancher tokens map to their users or
// get Rancher's exact 403; watches stream through both paths and can be cut; injected
// faults come back exactly as injected.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeClient } from '../../src/kube/client.js';
import { isForbidden, KubeError } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import type { WatchEvent } from '../../src/kube/watch.js';
import { createNamespace, createTokenUser, tokenKubeconfig } from '../control-plane/access.js';
import { eventuallyValue } from '../../test/support/eventually.js';
import { rancherKubeconfig } from '../rancher/credentials.js';
import {
  createRancherToken,
  deleteRancherToken,
  expireRancherToken,
  extendRancherToken,
  newRancherUserId,
  renewRancherToken,
} from '../rancher/tokens.js';
import { TEST_CLUSTER_ID, grantRole, send, sleep, untilAllowed, useFrontProxy } from './testing.js';

const fx = useFrontProxy();
const HOUR = 3_600_000;
const READ_VMS = {
  apiGroups: ['kubevirt.io'],
  resources: ['virtualmachines'],
  verbs: ['get', 'list', 'watch'],
};

/** Rancher's answer to every token it cannot use, for this cluster id. */
const rancherDenial = (clusterId: string): string =>
  `{"Code":{"Code":"Forbidden","Status":403},"Message":"clusters.management.cattle.io \\"${clusterId}\\" is forbidden: User \\"system:unauthenticated\\" cannot get resource \\"clusters\\" in API group \\"management.cattle.io\\" at the cluster scope","Cause":null,"FieldName":""}\n`;

const directClient = (token: string): KubeClient =>
  KubeClient.fromKubeconfig(
    tokenKubeconfig({ name: 'direct', server: fx.proxy.url, caPem: fx.proxy.caPem, token }),
    {
      retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
    },
  );

const rancherClient = (token: string): KubeClient =>
  KubeClient.fromKubeconfig(
    rancherKubeconfig({ proxyUrl: fx.proxy.url, clusterId: TEST_CLUSTER_ID, caPem: fx.proxy.caPem, token }),
    { retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } },
  );

async function rancherUser(): Promise<{ userId: string; token: string; name: string }> {
  const userId = newRancherUserId();
  const created = await createRancherToken(fx.rancher.admin, {
    userId,
    ttlMs: HOUR,
    clusterId: TEST_CLUSTER_ID,
  });
  return { userId, token: created.token, name: created.name };
}

const vmsPath = (ns: string): string =>
  `/k8s/clusters/${TEST_CLUSTER_ID}/apis/kubevirt.io/v1/namespaces/${ns}/virtualmachines`;

async function configMapIn(admin: KubeClient, namespace: string, name: string): Promise<void> {
  await admin.create<KubeObject>(Resources.configMap, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace },
  });
}

describe('direct path: the caller’s own credential', () => {
  it('reads as the token’s user and is denied what that user may not do', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'direct');
    const user = await createTokenUser(fx.harvester.admin, {
      expiresAt: new Date(Date.now() + HOUR),
      namespace: ns,
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    });
    const client = directClient(user.token);
    try {
      await configMapIn(fx.harvester.admin, ns, 'cm1');
      const list = await untilAllowed(() => client.list(Resources.configMap, { namespace: ns }));
      assert.ok(list.items.some((c) => c.metadata.name === 'cm1'));
      const denied = await client.list(Resources.secret, { namespace: ns }).catch((e: unknown) => e);
      assert.ok(isForbidden(denied), String(denied));
      assert.match(denied.message, new RegExp(`User "${user.username}" cannot list resource "secrets"`));
    } finally {
      client.close();
    }
  });

  it('answers an expired bootstrap token with the apiserver’s own 401', async () => {
    const user = await createTokenUser(fx.harvester.admin, { expiresAt: new Date(Date.now() + 3_000) });
    // The apiserver caches a good token for up to ~10 s after it expires.
    const res = await eventuallyValue(
      'the expired token to be refused',
      () => send(fx.proxy, { path: '/api/v1/namespaces/default', token: user.token }),
      (r) => r.status === 401,
      20_000,
    );
    assert.equal(res.status, 401);
    assert.equal(
      res.body,
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}\n',
    );
  });
});

describe('Rancher path: /k8s/clusters/<id>', () => {
  it('maps a valid Rancher token to its user: reads VMs its RBAC allows, denied the rest in its name', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'rancher-read');
    const { userId, token } = await rancherUser();
    await grantRole(fx.harvester.admin, { namespace: ns, user: userId, rules: [READ_VMS] });
    const client = rancherClient(token);
    try {
      await fx.harvester.admin.create(Resources.virtualMachine, {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        metadata: { name: 'vm1', namespace: ns },
        spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
      } as KubeObject);
      const vms = await untilAllowed(() => client.list(Resources.virtualMachine, { namespace: ns }));
      assert.deepEqual(
        vms.items.map((v) => v.metadata.name),
        ['vm1'],
      );
      const denied = await client
        .get(Resources.secret, { namespace: ns, name: 'x' })
        .catch((e: unknown) => e);
      assert.ok(isForbidden(denied), String(denied));
      assert.match(denied.message, new RegExp(`User "${userId}" cannot get resource "secrets"`));
    } finally {
      client.close();
    }
  });

  it('answers an expired, a deleted, an unknown and a missing token with Rancher’s exact 403', async () => {
    const expired = await rancherUser();
    await expireRancherToken(fx.rancher.admin, expired.name);
    const deleted = await rancherUser();
    assert.equal(await deleteRancherToken(fx.rancher.admin, deleted.name), true);
    const unknown = `kubeconfig-u-zzzzzq7xvb:${'x'.repeat(54)}`;
    const wrongSecret = `${(await rancherUser()).name}:${'x'.repeat(54)}`;
    for (const token of [expired.token, deleted.token, unknown, wrongSecret, undefined]) {
      const res = await send(fx.proxy, { path: vmsPath('default'), ...(token ? { token } : {}) });
      assert.equal(res.status, 403);
      assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(res.body, rancherDenial(TEST_CLUSTER_ID));
    }
    // What the driver sees: a rejected credential, with Rancher's message.
    const client = rancherClient(expired.token);
    try {
      const err = await client
        .list(Resources.virtualMachine, { namespace: 'default' })
        .catch((e: unknown) => e);
      assert.ok(err instanceof KubeError);
      assert.equal(err.kind, 'CredentialRejected');
      assert.equal(err.statusCode, 403);
      assert.match(err.message, /User "system:unauthenticated" cannot get resource "clusters"/);
      assert.doesNotMatch(err.message, new RegExp(expired.token.split(':')[1] ?? 'never'));
    } finally {
      client.close();
    }
  });

  it('answers an unknown cluster id as Rancher does: forbidden unless the user may see clusters, then not found', async () => {
    const member = await rancherUser();
    const path = '/k8s/clusters/c-m-unknown/api/v1/namespaces';
    assert.equal((await send(fx.proxy, { path })).body, rancherDenial('c-m-unknown'));
    const asMember = await send(fx.proxy, { path, token: member.token });
    assert.equal(asMember.status, 403);
    assert.match(
      asMember.body,
      new RegExp(`User \\\\"${member.userId}\\\\" cannot get resource \\\\"clusters\\\\"`),
    );
    // A user who may read every cluster (as Rancher's admins may) learns it does not exist.
    await fx.rancher.admin.create(Resources.clusterRoleBinding, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `read-clusters-${member.userId}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: member.userId }],
    } as KubeObject);
    let res = await send(fx.proxy, { path, token: member.token });
    for (let i = 0; i < 20 && res.status === 403; i++) {
      await sleep(100);
      res = await send(fx.proxy, { path, token: member.token });
    }
    assert.equal(res.status, 404);
    assert.equal(
      res.body,
      '{"Code":{"Code":"NotFound","Status":404},"Message":"clusters.management.cattle.io \\"c-m-unknown\\" not found","Cause":null,"FieldName":""}\n',
    );
  });

  it('Renew issues a new token (the old one stays refused); extending the same token revives it', async () => {
    const first = await rancherUser();
    await expireRancherToken(fx.rancher.admin, first.name);
    const renewed = await renewRancherToken(fx.rancher.admin, first, {
      clusterId: TEST_CLUSTER_ID,
      ttlMs: HOUR,
    });
    assert.notEqual(renewed.name, first.name);
    assert.match(renewed.name, new RegExp(`^kubeconfig-${first.userId}[a-z0-9]{5}$`));
    const path = '/k8s/clusters/c-m-sandbox/version';
    assert.equal((await send(fx.proxy, { path, token: first.token })).status, 403);
    assert.equal((await send(fx.proxy, { path, token: renewed.token })).status, 200);
    assert.equal(await extendRancherToken(fx.rancher.admin, first.name, { ttlMs: 0 }), undefined);
    assert.equal((await send(fx.proxy, { path, token: first.token })).status, 200);
  });
});

describe('watches, faults and counts', () => {
  it('streams watch events through both paths as they happen', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'watch');
    const direct = await createTokenUser(fx.harvester.admin, {
      expiresAt: new Date(Date.now() + HOUR),
      namespace: ns,
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    const viaRancher = await rancherUser();
    await grantRole(fx.harvester.admin, {
      namespace: ns,
      user: viaRancher.userId,
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    for (const client of [directClient(direct.token), rancherClient(viaRancher.token)]) {
      await untilAllowed(() => client.list(Resources.configMap, { namespace: ns }));
      const seen: Array<{ name: string; at: number }> = [];
      const watch = client.watch(Resources.configMap, { namespace: ns }, (e: WatchEvent<KubeObject>) => {
        if (e.type === 'ADDED') seen.push({ name: e.object.metadata.name, at: Date.now() });
      });
      try {
        await sleep(300);
        for (const name of ['a', 'b', 'c'].map((n) => `${n}-${seen.length}-${Date.now() % 1000}`)) {
          const createdAt = Date.now();
          await configMapIn(fx.harvester.admin, ns, name);
          const deadline = Date.now() + 3_000;
          while (!seen.some((s) => s.name === name) && Date.now() < deadline) await sleep(10);
          const event = seen.find((s) => s.name === name);
          assert.ok(event, `event for ${name} arrived while the stream stayed open`);
          assert.ok(event.at - createdAt < 1_500, `event for ${name} took ${event.at - createdAt} ms`);
        }
      } finally {
        watch.stop();
        await watch.done.catch(() => undefined);
        client.close();
      }
    }
  });

  it('dropWatches ends every open watch', async () => {
    const user = await createTokenUser(fx.harvester.admin, {
      expiresAt: new Date(Date.now() + HOUR),
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] }],
    });
    const client = directClient(user.token);
    try {
      await untilAllowed(() => client.list(Resources.configMap, {}));
      const watches = [0, 1].map(() =>
        client.watch(Resources.configMap, { timeoutSeconds: 300 }, () => undefined),
      );
      const ended = watches.map((w) =>
        w.done.then(
          () => Date.now(),
          () => Date.now(),
        ),
      );
      await sleep(500);
      const cutAt = Date.now();
      assert.equal(fx.proxy.faults.dropWatches(), 2);
      for (const at of await Promise.all(ended))
        assert.ok(at - cutAt < 2_000, 'the watch ended when it was cut');
    } finally {
      client.close();
    }
  });

  it('returns an injected 429 with Retry-After exactly as injected, then answers normally; counts requests', async () => {
    const user = await createTokenUser(fx.harvester.admin, {
      expiresAt: new Date(Date.now() + HOUR),
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get'] }],
    });
    const path = '/api/v1/namespaces/kube-public';
    const probe = directClient(user.token);
    await untilAllowed(() => probe.get(Resources.namespace, { name: 'kube-public' })).finally(() =>
      probe.close(),
    );
    fx.proxy.faults.resetCounts();
    fx.proxy.faults.inject({
      method: 'GET',
      pathPattern: /^\/api\/v1\/namespaces\/kube-public$/,
      status: 429,
      times: 1,
      retryAfterSeconds: 2,
    });
    const first = await send(fx.proxy, { path, token: user.token });
    assert.equal(first.status, 429);
    assert.equal(first.headers['retry-after'], '2');
    assert.deepEqual(JSON.parse(first.body), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Too many requests, please try again later.',
      reason: 'TooManyRequests',
      details: { retryAfterSeconds: 2 },
      code: 429,
    });
    assert.equal((await send(fx.proxy, { path, token: user.token })).status, 200);

    // Our client waits as long as asked, then succeeds.
    fx.proxy.faults.inject({ pathPattern: /kube-public$/, status: 503, times: 1, retryAfterSeconds: 1 });
    const client = KubeClient.fromKubeconfig(
      tokenKubeconfig({ name: 'retry', server: fx.proxy.url, caPem: fx.proxy.caPem, token: user.token }),
    );
    try {
      const started = Date.now();
      await client.get(Resources.namespace, { name: 'kube-public' });
      assert.ok(Date.now() - started >= 1_000, 'the client honoured Retry-After');
    } finally {
      client.close();
    }
    assert.equal(fx.proxy.faults.count({ method: 'GET', pathPattern: /kube-public$/ }), 4);
    fx.proxy.faults.clear();
  });
});
