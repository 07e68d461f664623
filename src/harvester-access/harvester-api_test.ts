// The driver's create when the connection drops after Harvester made the VM: the retried
// POST meets the VM as AlreadyExists; the driver gets its VM, and counts it among what this
// operation changed (a credential refused later must not claim that nothing was changed).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '../kube/resources.js';
import { ScriptedServer, answerJson, status } from '../kube/testing.js';
import type { VirtualMachine } from '../harvester/types.js';
import { HarvesterApi } from './harvester-api.js';
import { CredentialRejectedError } from './credential-error.js';

let server: ScriptedServer;
let stored: KubeObject | undefined;

before(async () => {
  let posts = 0;
  server = await ScriptedServer.start((req, res) => {
    if (req.method === 'POST') {
      posts++;
      if (stored)
        return answerJson(
          res,
          409,
          status(409, 'AlreadyExists', 'virtualmachines.kubevirt.io "vm1" already exists'),
        );
      const sent = JSON.parse(req.body) as KubeObject;
      stored = { ...sent, metadata: { ...sent.metadata, uid: 'vm-uid', resourceVersion: '7' } };
      if (posts === 1) return void res.socket?.destroy(); // made, but the answer is lost
      return answerJson(res, 201, stored);
    }
    if (req.path.endsWith('/virtualmachines/vm1') && stored) return answerJson(res, 200, stored);
    answerJson(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
  });
});
after(() => server.close());

describe('HarvesterApi.createVm', () => {
  it('a create whose answer was lost returns the VM it made, and remembers that it made it', async () => {
    const api = new HarvesterApi(server.client(), 'argv').forOperation();
    const vm = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: {
        name: 'vm1',
        namespace: 'default',
        labels: { 'harvesterhci.io/creator': 'docker-machine-driver-harvester' },
      },
      spec: { runStrategy: 'RerunOnFailure', template: { spec: { domain: { devices: {} } } } },
    } as unknown as VirtualMachine;
    const created = await api.createVm(vm);
    assert.equal(created.metadata.uid, 'vm-uid');
    await assert.rejects(api.findVm('default', 'other'), (err: unknown) => {
      assert.ok(err instanceof CredentialRejectedError, String(err));
      assert.match(err.message, /this operation had created VM default\/vm1;/);
      return true;
    });
  });
});
