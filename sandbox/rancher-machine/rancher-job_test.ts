import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { machineSpecConfig, rancherCreateArgs } from './rancher-job.js';

describe('rancher-machine create arguments', () => {
  it("names a machine's field as Rancher names its flag (an upper-case run stays one word)", () => {
    assert.deepEqual(machineSpecConfig({ ioThreadCount: 2, vmAffinity: 'x', enableEFI: true, common: {} }), {
      'io-thread-count': 2,
      'vm-affinity': 'x',
      'enable-efi': true,
    });
  });

  it("renders values and sorts the flags, the cluster's name among them, as Rancher's job does", () => {
    const args = rancherCreateArgs({
      instance: 'm-1',
      clusterName: 'c1',
      installScript: '/s',
      config: {
        'memory-size': 4,
        'cpu-count': 4294967295,
        'ssh-user': '',
        'enable-efi': true,
        'vm-affinity': false,
      },
    });
    assert.deepEqual(args, [
      'create',
      '--driver=harvester',
      '--custom-install-script=/s',
      '--harvester-cluster-name=c1',
      '--harvester-cpu-count=4.294967295e+09',
      '--harvester-enable-efi',
      '--harvester-memory-size=4',
      'm-1',
    ]);
  });
});
