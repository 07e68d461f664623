import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseRole } from './role.js';

describe('chooseRole', () => {
  it('is the plugin under the name rancher-machine looks up, whatever the arguments', () => {
    assert.equal(chooseRole('docker-machine-driver-harvester', ['rancher-machine', 'create'], {}), 'plugin');
    assert.equal(chooseRole('docker-machine-driver-harvester', ['controller'], {}), 'plugin');
    assert.equal(chooseRole('docker-machine-driver-harvester', ['--version'], {}), 'plugin');
  });

  it("is the plugin under any name when rancher-machine's plugin environment is there", () => {
    assert.equal(
      chooseRole('harvester-machine', ['rancher-machine', 'create'], { MACHINE_PLUGIN_TOKEN: '42' }),
      'plugin',
    );
    // A wrong token is still the plugin's to reject (with RegisterDriver's message).
    assert.equal(chooseRole('harvester-machine', [], { MACHINE_PLUGIN_TOKEN: '' }), 'plugin');
  });

  it('is the controller for `controller [flags]`, and the CLI otherwise', () => {
    assert.equal(chooseRole('harvester-machine', ['controller', '--leader-elect=false'], {}), 'controller');
    assert.equal(chooseRole('harvester-machine-linux-amd64', ['controller'], {}), 'controller');
    assert.equal(chooseRole('harvester-machine', ['volumes', 'list'], {}), 'cli');
    assert.equal(chooseRole('harvester-machine', ['--version'], {}), 'cli');
    assert.equal(chooseRole('harvester-machine', [], {}), 'cli');
    assert.equal(chooseRole('harvester-machine', ['rm', 'controller'], {}), 'cli');
  });
});
