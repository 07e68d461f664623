import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatLabelValue, isValidLabelValue } from './labels.js';
import { cloudInitSecretName, machineSetName, namespacedName, nodePoolName, pvcName } from './names.js';

describe('formatLabelValue', () => {
  it('keeps valid label values as they are', () => {
    for (const v of ['', 'a', 'default-mycluster-pool1', 'A.b_c-9', 'x'.repeat(63)]) {
      assert.equal(formatLabelValue(v), v);
    }
  });

  it('matches cluster-api’s own test vector', () => {
    // util/labels/format/helpers_test.go: a 168-character MachineSet name.
    assert.equal(formatLabelValue('machineSetName'.repeat(12)), 'hash_FR_ghQ_z');
  });

  it('hashes invalid values: FNV-1a 32 over the bytes, big-endian, base64url without padding', () => {
    // FNV-1a("a/b"): 0x811c9dc5 ^ 0x61 * 0x01000193 = 0xe40c292c (the published vector for "a"),
    // then ^ 0x2f * p, ^ 0x62 * p = 0x3a8e75c1 → bytes 3a 8e 75 c1 → "Oo51wQ".
    assert.equal(formatLabelValue('a/b'), 'hash_Oo51wQ_z');
    assert.equal(formatLabelValue('Pool_1!'), 'hash_gTflWg_z');
    assert.equal(formatLabelValue(`default-${'a'.repeat(40)}-${'b'.repeat(30)}`), 'hash_84LKiA_z');
    assert.equal(formatLabelValue('x'.repeat(64)).length, 13);
  });

  it('produces valid label values', () => {
    for (const v of ['-leading', 'trailing-', 'has space', 'ünïcödé', 'x'.repeat(200)]) {
      assert.ok(isValidLabelValue(formatLabelValue(v)), v);
    }
  });
});

describe('names from the machine name', () => {
  it('machineSetName: namespace + machine name without its last two segments', () => {
    assert.equal(machineSetName('default', 'mycluster-pool1-7f8d9c5b6-x2v9q'), 'default-mycluster-pool1');
    assert.equal(machineSetName('ns1', 'c-p-a-b-hash-rand'), 'ns1-c-p-a-b');
    assert.equal(machineSetName('default', 'a-b'), 'default');
    assert.equal(machineSetName('default', 'node1'), '', 'Go: fewer than two dashes leaves nothing');
  });

  it('machineSetName: hashed when over 63 characters (same value as the Go driver)', () => {
    const machine = `${'a'.repeat(40)}-${'b'.repeat(30)}-7f8d9c5b6-x2v9q`;
    assert.equal(machineSetName('default', machine), 'hash_84LKiA_z');
  });

  it('nodePoolName: machine name minus the last segment and the cluster-name prefix', () => {
    assert.equal(nodePoolName('mycluster-pool1-7f8d9c5b6-x2v9q', 'mycluster'), 'pool1-7f8d9c5b6');
    assert.equal(nodePoolName('mycluster-pool1-7f8d9c5b6-x2v9q', ''), 'mycluster-pool1-7f8d9c5b6');
    // Go's TrimPrefix is not aligned to segments.
    assert.equal(nodePoolName('mycluster-pool1-7f8d9c5b6-x2v9q', 'my'), 'cluster-pool1-7f8d9c5b6');
    assert.equal(nodePoolName('node1', 'c'), 'node1', 'no dash: Go panics, we keep the name');
  });

  it('other names', () => {
    assert.equal(pvcName('vm1', 'disk-0', 'ab12c'), 'vm1-disk-0-ab12c');
    assert.equal(cloudInitSecretName('vm1'), 'vm1-cloudinit');
    assert.deepEqual(namespacedName('image-1', 'default'), { namespace: 'default', name: 'image-1' });
    assert.deepEqual(namespacedName('harvester-public/image-1', 'default'), {
      namespace: 'harvester-public',
      name: 'image-1',
    });
    // An empty namespace is the default one, and only the first "/" splits.
    assert.deepEqual(namespacedName('/image-1', 'default'), { namespace: 'default', name: 'image-1' });
    assert.deepEqual(namespacedName('ns/a/b', 'default'), { namespace: 'ns', name: 'a/b' });
  });
});
