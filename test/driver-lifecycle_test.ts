// The driver's lifecycle against the sandbox, through both kinds of kubeconfig:
// a Harvester user's own (direct) and the one Rancher generates (/k8s/clusters/<id>).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MachineState } from '../src/driver/machine-driver.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import type { Vmi } from '../src/harvester-access/harvester-api.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { newMachine, tempStore } from './support/machines.js';

const fixture = useSandbox();
const store = tempStore();

for (const path of ['direct', 'via Rancher'] as const) {
  describe(`driver lifecycle (${path} kubeconfig)`, () => {
    const kubeconfig = (): string =>
      path === 'direct'
        ? fixture.sandbox.kubeconfigs.harvesterDirect
        : fixture.sandbox.kubeconfigs.harvesterViaRancher;
    const name = path === 'direct' ? 'life-direct-pool1-abc12-x1' : 'life-rancher-pool1-abc12-x1';

    it('creates a machine, reports its state and addresses, stops, starts, restarts and removes it', async () => {
      const { admin } = fixture.sandbox.harvester;
      const { driver, log } = newMachine({
        name,
        kubeconfig: kubeconfig(),
        storePath: store,
        clusterName: 'life',
      });
      await driver.preCreateCheck();
      await driver.create();
      assert.match(driver.config.IPAddress, /^\d+\.\d+\.\d+\.\d+$/);
      assert.equal(await driver.getState(), MachineState.Running);
      assert.equal(await driver.getIP(), driver.config.IPAddress);
      // The guest network is dual-stack: a global IPv6 address besides the link-local one.
      assert.match(await driver.getIPv6(), /^fd20:172:20::[0-9a-f]+$/);
      assert.equal(await driver.getURL(), `tcp://${driver.config.IPAddress}:2376`);
      assert.equal(await driver.getSSHHostname(), driver.config.IPAddress);
      const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: 'default', name });
      assert.equal(vm.metadata.labels?.['guestcluster.harvesterhci.io/name'], 'life');

      await driver.stop();
      assert.equal(await driver.getState(), MachineState.Stopped);
      await driver.stop(); // a stopped VM stops again without error
      await assert.rejects(driver.getIP(), /Host is not running/);

      await driver.start();
      assert.equal(await driver.getState(), MachineState.Running);
      await driver.start(); // running: start is a no-op

      const before = await admin.get<Vmi>(Resources.virtualMachineInstance, { namespace: 'default', name });
      await driver.restart();
      const afterRestart = await admin.get<Vmi>(Resources.virtualMachineInstance, {
        namespace: 'default',
        name,
      });
      assert.notEqual(afterRestart.metadata.uid, before.metadata.uid);
      assert.equal(afterRestart.status?.phase, 'Running');

      await driver.remove();
      assert.equal(await admin.find(Resources.virtualMachine, { namespace: 'default', name }), undefined);
      assert.equal(await driver.getState(), MachineState.NotFound);
      await driver.remove(); // gone already: success
      assert.match(
        log.text(),
        /Remove node[\s\S]*Waiting for node removed[\s\S]*Remove node\n.*already gone/,
      );
      driver.close();
    });
  });
}
