import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatKeyValues,
  parseKeyValues,
  reservedKeyOwner,
  vmAnnotationProblems,
  vmLabelProblems,
} from './user-metadata.js';

describe('--harvester-vm-labels and --harvester-vm-annotations', () => {
  it('take key=value,key2=value2 (PR #83’s form) and a JSON object', () => {
    assert.deepEqual(parseKeyValues('app=web, example.com/tier=front').value, {
      app: 'web',
      'example.com/tier': 'front',
    });
    assert.deepEqual(parseKeyValues('{"note":"a, b=c"}').value, { note: 'a, b=c' });
    assert.deepEqual(parseKeyValues('').value, {});
    assert.deepEqual(parseKeyValues('empty=').value, { empty: '' });
  });

  it('refuse what is not key=value, a key twice, or JSON values that are not strings', () => {
    assert.match(parseKeyValues('app=web,tier').problems.join(), /entry 2 "tier" is not key=value/);
    assert.match(parseKeyValues('a=1,a=2').problems.join(), /key "a" is given twice/);
    assert.match(parseKeyValues('{"a":1}').problems.join(), /values must be strings \("a" is not\)/);
    assert.match(parseKeyValues('{"a":').problems.join(), /not valid JSON/);
  });

  it('refuse the keys the driver, Harvester, KubeVirt, Rancher and Kubernetes own, naming the key', () => {
    for (const key of [
      'harvesterhci.io/vmName',
      'harvesterhci.io/creator',
      'guestcluster.harvesterhci.io/name',
      'nodepool.harvesterhci.io/name',
      'network.harvesterhci.io/ippool-name',
      'kubevirt.io/domain',
      'vm.kubevirt.io/name',
      'kubernetes.io/hostname',
      'k8s.io/x',
      'harvester-machine.io/machine',
      'cluster.cattle.io/x',
    ]) {
      assert.ok(reservedKeyOwner(key), key);
      assert.match(
        vmLabelProblems({ [key]: 'x' }).join(),
        new RegExp(`label key "${key.replaceAll('.', '\\.')}" is owned by`),
      );
    }
    for (const key of ['app', 'app.kubernetes.io/name', 'example.com/tier', 'harvesterhci.io.example.com/x'])
      assert.equal(reservedKeyOwner(key), undefined, key);
  });

  it('refuse keys and label values Kubernetes would refuse, instead of changing them', () => {
    assert.match(vmLabelProblems({ 'Bad_Prefix.com/a': 'x' }).join(), /prefix that is not a DNS subdomain/);
    assert.match(vmLabelProblems({ '-a': 'x' }).join(), /not a valid key/);
    assert.match(vmLabelProblems({ a: 'not ok' }).join(), /is not a label value/);
    assert.match(vmLabelProblems({ a: 'x'.repeat(64) }).join(), /is not a label value/);
    assert.deepEqual(vmLabelProblems({ a: '', b: 'web-1.x_y' }), []);
    assert.deepEqual(vmAnnotationProblems({ note: 'anything, at all: {"json": true}' }), []);
    assert.match(vmAnnotationProblems({ big: 'x'.repeat(256 * 1024) }).join(), /at most 262144 bytes/);
  });

  it('formats them back sorted', () => {
    assert.equal(formatKeyValues({ b: '2', a: '1' }), 'a=1,b=2');
  });
});
