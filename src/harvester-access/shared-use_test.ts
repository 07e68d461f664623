// HarvesterApi as the CLI and the controller use it (no credential source): a refused
// credential stays the KubeError their handling classifies; a VM annotation for the
// controller's cleanup is a patch of its key only, on whatever version the VM has, while the
// driver's carries the version it read; a list without a namespace reads every namespace.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeError } from '../kube/errors.js';
import { ScriptedServer, answerJson, status } from '../kube/testing.js';
import { HarvesterApi } from './harvester-api.js';
import { CredentialRejectedError } from './credential-error.js';

let server: ScriptedServer;

before(async () => {
  server = await ScriptedServer.start((req, res) => {
    if (req.method === 'PATCH') {
      const sent = JSON.parse(req.body) as { metadata: object };
      return answerJson(res, 200, { metadata: { name: 'vm1', namespace: 'ns', ...sent.metadata } });
    }
    if (req.method === 'GET' && req.path.endsWith('/virtualmachines'))
      return answerJson(res, 200, { metadata: {}, items: [{ metadata: { name: 'a', namespace: 'x' } }] });
    answerJson(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
  });
});
after(() => server.close());

const vm = { metadata: { name: 'vm1', namespace: 'ns', resourceVersion: '41' } };

describe('HarvesterApi for the CLI and the controller', () => {
  it('leaves a refused credential the KubeError it is; the driver, given a source, gets its own error', async () => {
    await assert.rejects(new HarvesterApi(server.client()).findVm('ns', 'vm1'), (err: unknown) => {
      assert.ok(err instanceof KubeError && !(err instanceof CredentialRejectedError), String(err));
      assert.equal(err.kind, 'CredentialRejected');
      return true;
    });
    await assert.rejects(
      new HarvesterApi(server.client(), 'saved').findVm('ns', 'vm1'),
      CredentialRejectedError,
    );
  });

  it('patches only the annotation with anyVersion, and the version read otherwise', async () => {
    const api = new HarvesterApi(server.client());
    const bodies = () =>
      server.requests.filter((r) => r.method === 'PATCH').map((r) => JSON.parse(r.body) as unknown);
    await api.patchVmAnnotations(vm, { a: 'true' }, { anyVersion: true });
    await api.patchVmAnnotations(vm, { b: 'x' });
    assert.deepEqual(bodies(), [
      { metadata: { annotations: { a: 'true' } } },
      { metadata: { resourceVersion: '41', annotations: { b: 'x' } } },
    ]);
  });

  it('lists every namespace when given none', async () => {
    const vms = await new HarvesterApi(server.client()).listVms(undefined);
    assert.deepEqual(
      vms.map((v) => v.metadata.name),
      ['a'],
    );
    const list = server.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/virtualmachines'));
    assert.deepEqual(
      list.map((r) => r.path),
      ['/apis/kubevirt.io/v1/virtualmachines'],
    );
  });
});
