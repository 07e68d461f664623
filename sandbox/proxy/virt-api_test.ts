// The virt-api the front proxy plays, against real control planes: each answer of
// kubevirt v1.7.0's start/stop/restart, byte for byte, and who may ask (TokenReview +
// SubjectAccessReview against the real RBAC, worded as the real apiserver words it).
import assert from 'node:assert/strict';
import https from 'node:https';
import { describe, it } from 'node:test';
import { Resources } from '../../src/kube/resources.js';
import { createNamespace, createTokenUser } from '../control-plane/access.js';
import { createRancherToken, newRancherUserId } from '../rancher/tokens.js';
import { eventuallyValue } from '../../test/support/eventually.js';
import {
  LIFECYCLE_RULE,
  TEST_CLUSTER_ID,
  createVm,
  grantRole,
  send,
  useFrontProxy,
  type RawResponse,
  type VmObject,
} from './testing.js';

const fx = useFrontProxy();
const HOUR = 3_600_000;
const subresource = (ns: string, vm: string, action: string): string =>
  `/apis/subresources.kubevirt.io/v1/namespaces/${ns}/virtualmachines/${vm}/${action}`;

/** virt-api's error body: go-restful pretty-prints with a one-space indent. */
const virtApiBody = (code: number, reason: string, message: string, vm: string): string =>
  JSON.stringify(
    {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      details: { name: vm, group: 'kubevirt.io', kind: 'virtualmachine' },
      code,
    },
    null,
    1,
  );

let operatorToken: Promise<string> | undefined;
/** A caller allowed to start, stop and restart VMs everywhere (made once, used once its RBAC is in effect). */
function operator(): Promise<string> {
  return (operatorToken ??= (async () => {
    const user = await createTokenUser(fx.harvester.admin, {
      expiresAt: new Date(Date.now() + HOUR),
      rules: [LIFECYCLE_RULE],
    });
    const probe = subresource('default', 'no-such-vm', 'start');
    await untilNot403(() => send(fx.proxy, { method: 'PUT', path: probe, token: user.token }));
    return user.token;
  })());
}

/** RBAC reaches the authorizer through an informer: a fresh binding may take a moment. */
function untilNot403(attempt: () => Promise<RawResponse>): Promise<RawResponse> {
  return eventuallyValue(
    'a fresh RoleBinding to reach the authorizer',
    attempt,
    (res) => res.status !== 403,
    5_000,
  );
}

const CANNOT = 'Operation cannot be fulfilled on virtualmachine.kubevirt.io';
const messageOf = (res: RawResponse): string | undefined =>
  (JSON.parse(res.body) as { message?: string }).message;

const getVm = (ns: string, name: string): Promise<VmObject> =>
  fx.harvester.admin.get<VmObject>(Resources.virtualMachine, { namespace: ns, name });

describe('virt-api start/stop/restart through the front proxy', () => {
  it('refuses to start a running VM with virt-api’s 409, byte for byte', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'start-running');
    await createVm(fx.harvester.admin, { namespace: ns, name: 'vm1' }, 'RerunOnFailure', 'Running');
    const res = await send(fx.proxy, {
      method: 'PUT',
      path: subresource(ns, 'vm1', 'start'),
      token: await operator(),
    });
    assert.equal(res.status, 409);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(
      res.body,
      virtApiBody(
        409,
        'Conflict',
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm1": VM is already running',
        'vm1',
      ),
    );
  });

  it('refuses to stop a stopped RerunOnFailure VM (409 VM is not running)', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'stop-stopped');
    await createVm(fx.harvester.admin, { namespace: ns, name: 'vm1' }, 'RerunOnFailure');
    const res = await send(fx.proxy, {
      method: 'PUT',
      path: subresource(ns, 'vm1', 'stop'),
      token: await operator(),
    });
    assert.equal(res.status, 409);
    assert.equal(
      res.body,
      virtApiBody(
        409,
        'Conflict',
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm1": VM is not running',
        'vm1',
      ),
    );
  });

  it('starts a stopped VM by writing [{action: Start}] into its status (202), and refuses to stack a second', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'start-stopped');
    await createVm(fx.harvester.admin, { namespace: ns, name: 'vm1' }, 'RerunOnFailure');
    const token = await operator();
    const res = await send(fx.proxy, { method: 'PUT', path: subresource(ns, 'vm1', 'start'), token });
    assert.equal(res.status, 202);
    assert.equal(res.body, '');
    const vm = await getVm(ns, 'vm1');
    assert.deepEqual(vm.status?.stateChangeRequests, [{ action: 'Start' }]);
    assert.equal(vm.spec.runStrategy, 'RerunOnFailure');
    const again = await send(fx.proxy, { method: 'PUT', path: subresource(ns, 'vm1', 'start'), token });
    assert.equal(again.status, 500);
    assert.equal(
      messageOf(again),
      'Internal error occurred: unable to complete request: stop/start already underway',
    );
  });

  it('restarts a running VM by writing [Stop{uid of its VMI}, Start]', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'restart');
    const { vmiUid } = await createVm(
      fx.harvester.admin,
      { namespace: ns, name: 'vm1' },
      'RerunOnFailure',
      'Running',
    );
    const res = await send(fx.proxy, {
      method: 'PUT',
      path: subresource(ns, 'vm1', 'restart'),
      token: await operator(),
    });
    assert.equal(res.status, 202);
    assert.deepEqual((await getVm(ns, 'vm1')).status?.stateChangeRequests, [
      { action: 'Stop', uid: vmiUid },
      { action: 'Start' },
    ]);
  });

  it('stops a running RerunOnFailure VM with [Stop{uid}] and leaves its run strategy', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'stop-running');
    const { vmiUid } = await createVm(
      fx.harvester.admin,
      { namespace: ns, name: 'vm1' },
      'RerunOnFailure',
      'Running',
    );
    const res = await send(fx.proxy, {
      method: 'PUT',
      path: subresource(ns, 'vm1', 'stop'),
      token: await operator(),
    });
    assert.equal(res.status, 202);
    const vm = await getVm(ns, 'vm1');
    assert.deepEqual(vm.status?.stateChangeRequests, [{ action: 'Stop', uid: vmiUid }]);
    assert.equal(vm.spec.runStrategy, 'RerunOnFailure');
  });

  it('moves Halted to Always on start and Always to Halted on stop; refuses what virt-api refuses', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'halted');
    const token = await operator();
    const put = (vm: string, action: string): Promise<RawResponse> =>
      send(fx.proxy, { method: 'PUT', path: subresource(ns, vm, action), token });
    await createVm(fx.harvester.admin, { namespace: ns, name: 'halted' }, 'Halted');
    const restartHalted = await put('halted', 'restart');
    assert.equal(restartHalted.status, 409);
    assert.equal(
      messageOf(restartHalted),
      `${CANNOT} "halted": RunStategy Halted does not support manual restart requests`,
    );
    assert.equal((await put('halted', 'start')).status, 202);
    assert.equal((await getVm(ns, 'halted')).spec.runStrategy, 'Always');
    assert.equal(
      (await getVm(ns, 'halted')).status,
      undefined,
      'a run strategy change writes no state change request',
    );

    await createVm(fx.harvester.admin, { namespace: ns, name: 'always' }, 'Always', 'Running');
    const startAlways = await put('always', 'start');
    assert.equal(startAlways.status, 409);
    assert.equal(messageOf(startAlways), `${CANNOT} "always": VM is already running`);
    assert.equal((await put('always', 'stop')).status, 202);
    assert.equal((await getVm(ns, 'always')).spec.runStrategy, 'Halted');

    await createVm(fx.harvester.admin, { namespace: ns, name: 'always-stopped' }, 'Always');
    const start = await put('always-stopped', 'start');
    assert.equal(start.status, 409);
    assert.equal(
      messageOf(start),
      `${CANNOT} "always-stopped": Always does not support manual start requests`,
    );
    const restart = await put('always-stopped', 'restart');
    assert.equal(restart.status, 409);
    assert.equal(messageOf(restart), `${CANNOT} "always-stopped": VM is not running: Halted`);
  });

  it('answers 404 for a VM that does not exist, as virt-api words it', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'missing');
    const res = await send(fx.proxy, {
      method: 'PUT',
      path: subresource(ns, 'ghost', 'start'),
      token: await operator(),
    });
    assert.equal(res.status, 404);
    assert.equal(
      res.body,
      virtApiBody(404, 'NotFound', 'virtualmachine.kubevirt.io "ghost" not found', 'ghost'),
    );
  });

  it('serves its discovery document', async () => {
    const res = await send(fx.proxy, { path: '/apis/subresources.kubevirt.io/v1', token: await operator() });
    assert.equal(res.status, 200);
    const list = JSON.parse(res.body) as { groupVersion: string; resources: Array<{ name: string }> };
    assert.equal(list.groupVersion, 'subresources.kubevirt.io/v1');
    assert.deepEqual(
      list.resources.map((r) => r.name),
      ['virtualmachines/start', 'virtualmachines/stop', 'virtualmachines/restart'],
    );
  });
});

describe('who may start a VM', () => {
  it('refuses a user without RBAC in the apiserver’s exact words, and accepts one with the Role', async () => {
    const { harvester, proxy } = fx;
    const ns = await createNamespace(harvester.admin, 'rbac');
    await createVm(harvester.admin, { namespace: ns, name: 'vm1' }, 'RerunOnFailure');
    const user = await createTokenUser(harvester.admin, { expiresAt: new Date(Date.now() + HOUR) });
    const denied = await send(proxy, {
      method: 'PUT',
      path: subresource(ns, 'vm1', 'start'),
      token: user.token,
    });
    assert.equal(denied.status, 403);
    // The real apiserver's denial of the analogous request (a subresource of a VM),
    // renamed: same template, same bytes.
    const real = await rawToApiserver(
      `/apis/kubevirt.io/v1/namespaces/${ns}/virtualmachines/vm1/status`,
      user.token,
    );
    assert.equal(real.status, 403);
    const expected = real.body
      .replace('virtualmachines.kubevirt.io', 'virtualmachines.subresources.kubevirt.io')
      .replace('virtualmachines/status', 'virtualmachines/start')
      .replace(/"kubevirt\.io"/g, '"subresources.kubevirt.io"')
      .replace('API group \\"kubevirt.io\\"', 'API group \\"subresources.kubevirt.io\\"');
    assert.equal(denied.body, expected);
    assert.match(
      denied.body,
      new RegExp(
        `virtualmachines.subresources.kubevirt.io \\\\"vm1\\\\" is forbidden: User \\\\"${user.username}\\\\" cannot update resource \\\\"virtualmachines/start\\\\" in API group \\\\"subresources.kubevirt.io\\\\" in the namespace \\\\"${ns}\\\\"`,
      ),
    );

    await grantRole(harvester.admin, { namespace: ns, user: user.username, rules: [LIFECYCLE_RULE] });
    const allowed = await untilNot403(() =>
      send(proxy, { method: 'PUT', path: subresource(ns, 'vm1', 'start'), token: user.token }),
    );
    assert.equal(allowed.status, 202);
  });

  it('treats a request without a token as system:anonymous, and a bad token as the apiserver does (401)', async () => {
    const ns = await createNamespace(fx.harvester.admin, 'anon');
    await createVm(fx.harvester.admin, { namespace: ns, name: 'vm1' }, 'RerunOnFailure');
    const anonymous = await send(fx.proxy, { method: 'PUT', path: subresource(ns, 'vm1', 'start') });
    assert.equal(anonymous.status, 403);
    assert.match(
      anonymous.body,
      /User \\"system:anonymous\\" cannot update resource \\"virtualmachines\/start\\"/,
    );
    const badToken = 'abcdef.0123456789abcdef';
    const res = await send(fx.proxy, {
      method: 'PUT',
      path: subresource(ns, 'vm1', 'start'),
      token: badToken,
    });
    const real = await rawToApiserver('/api/v1/namespaces', badToken);
    assert.equal(res.status, 401);
    assert.equal(real.status, 401);
    assert.equal(res.body, real.body);
  });

  it('through Rancher: the impersonated user’s RBAC decides', async () => {
    const { harvester, rancher, proxy } = fx;
    const ns = await createNamespace(harvester.admin, 'via-rancher');
    await createVm(harvester.admin, { namespace: ns, name: 'vm1' }, 'RerunOnFailure');
    const userId = newRancherUserId();
    const token = await createRancherToken(rancher.admin, {
      userId,
      ttlMs: HOUR,
      clusterId: TEST_CLUSTER_ID,
    });
    const path = `/k8s/clusters/${TEST_CLUSTER_ID}${subresource(ns, 'vm1', 'start')}`;
    const denied = await send(proxy, { method: 'PUT', path, token: token.token });
    assert.equal(denied.status, 403);
    assert.match(
      denied.body,
      new RegExp(`User \\\\"${userId}\\\\" cannot update resource \\\\"virtualmachines/start\\\\"`),
    );
    await grantRole(harvester.admin, { namespace: ns, user: userId, rules: [LIFECYCLE_RULE] });
    const allowed = await untilNot403(() => send(proxy, { method: 'PUT', path, token: token.token }));
    assert.equal(allowed.status, 202);
    assert.deepEqual((await getVm(ns, 'vm1')).status?.stateChangeRequests, [{ action: 'Start' }]);
  });
});

/** The same user's request straight to the Harvester apiserver (a PUT of {} for /status), bypassing the proxy. */
function rawToApiserver(path: string, token: string): Promise<RawResponse> {
  const url = new URL(path, fx.harvester.server);
  const method = path.endsWith('/status') ? 'PUT' : 'GET';
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        ca: fx.harvester.caPem,
        agent: false,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(method === 'PUT' ? '{}' : undefined);
  });
}
