// Through Rancher's proxy every request is a round trip: the reads that do not depend on each
// other go out together. Each test holds every answer back until it has seen which reads were
// sent, so a sequential version (one read, its answer, the next) fails.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rancherKubeconfig } from '../../kube/testing/kubeconfig.js';
import { silentLogger } from '../../log/logger.js';
import { MachineState } from '../../harvester/machine-state.js';
import { configFromFlags, newDriverConfig } from '../config/index.js';
import { defaultFlagValues } from '../config/flags.js';
import type { HarvesterApi } from '../../harvester-access/harvester-api.js';
import type { OperationContext } from './context.js';
import { machineState } from './machine-status.js';
import { PreCreateCheckError, preCreateCheck } from './pre-create-check.js';

/** An api whose every method records its call and answers "not found" once released. */
function heldApi(): { api: HarvesterApi; calls: string[]; release: () => void } {
  const calls: string[] = [];
  let release = (): void => undefined;
  const released = new Promise<void>((r) => (release = r));
  const api = new Proxy(
    {},
    {
      get: (_, name) =>
        name === 'server'
          ? 'https://harvester.example.test'
          : (...args: unknown[]) => {
              calls.push(`${String(name)}(${args.map(String).join(', ')})`);
              return released.then(() => undefined);
            },
    },
  ) as HarvesterApi;
  return { api, calls, release };
}

function context(api: HarvesterApi): OperationContext {
  const values = defaultFlagValues();
  values.set('harvester-kubeconfig-content', Buffer.from(rancherKubeconfig()).toString('base64'));
  values.set('harvester-cluster-name', 'mycluster');
  values.set('harvester-image-name', 'default/image-abc12');
  values.set('harvester-disk-size', 40);
  values.set('harvester-network-name', 'default/vlan1');
  values.set('harvester-ssh-user', 'ubuntu');
  return {
    config: configFromFlags(values, newDriverConfig('mycluster-pool1-7f8d9c5b6-x2v9q', '/store')),
    api,
    log: silentLogger,
    sshKeyPath: '/store/machines/mycluster-pool1-7f8d9c5b6-x2v9q/id_rsa',
    kubeconfigTrust: 'credential',
  };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('reads that do not depend on each other go out together', () => {
  it('PreCreateCheck sends the server, VM, image and network reads at once; problems keep the checks’ order', async () => {
    const { api, calls, release } = heldApi();
    const checked = preCreateCheck(context(api));
    await settle();
    const sent = calls.map((c) => c.slice(0, c.indexOf('(')));
    for (const read of ['findSetting', 'findVm', 'findImage', 'findNetwork'])
      assert.ok(sent.includes(read), `${read} not sent before any answer: ${calls.join('; ')}`);
    release();
    const err = await checked.then(
      () => assert.fail('every read answered "not found": the check must fail'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof PreCreateCheckError, String(err));
    const message = err.message;
    const order = ['server-version', 'image', 'network'].map((word) => message.indexOf(word));
    assert.ok(
      order.every((at) => at >= 0),
      message,
    );
    assert.deepEqual(
      order,
      [...order].sort((a, b) => a - b),
      `problems out of the checks' order: ${message}`,
    );
  });

  it('GetState reads the VM and its instance at once', async () => {
    const { api, calls, release } = heldApi();
    const state = machineState(context(api));
    await settle();
    assert.deepEqual(
      calls.map((c) => c.slice(0, c.indexOf('('))),
      ['findVm', 'findVmi'],
    );
    release();
    assert.equal(await state, MachineState.NotFound);
  });
});
