import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyMap, formatKey, keyOf, keyText, keyTextOf, objectKey, parseKey, sameKey } from './object-key.js';

describe('ObjectKey', () => {
  it('is read off an object, cluster-scoped ones with namespace ""', () => {
    assert.deepEqual(keyOf({ metadata: { namespace: 'ns', name: 'vm' } }), { namespace: 'ns', name: 'vm' });
    assert.deepEqual(keyOf({ metadata: { name: 'pool' } }), { namespace: '', name: 'pool' });
    assert.deepEqual(objectKey(undefined, 'pool'), { namespace: '', name: 'pool' });
  });

  it('formats as kubectl writes it and parses back to the same key', () => {
    for (const key of [objectKey('ns', 'vm'), objectKey('', 'pool')])
      assert.ok(sameKey(parseKey(formatKey(key)), key), formatKey(key));
    assert.equal(formatKey(objectKey('ns', 'vm')), 'ns/vm');
    assert.equal(formatKey(objectKey('', 'pool')), 'pool');
    assert.ok(!sameKey(objectKey('a', 'b'), objectKey('b', 'a')));
  });

  it('writes "namespace/name" with the slash always, a missing part as ""', () => {
    assert.equal(keyText('ns', 'vm'), 'ns/vm');
    assert.equal(keyText(undefined, 'pool'), '/pool');
    assert.equal(keyText('ns', undefined), 'ns/');
    assert.equal(keyTextOf({ metadata: { namespace: 'ns', name: 'vm' } }), 'ns/vm');
    assert.equal(keyTextOf({ metadata: { name: 'pool' } }), '/pool');
  });

  it('indexes a KeyMap by namespace and name, not by the key object', () => {
    const map = new KeyMap<number>();
    map.set(objectKey('ns', 'a'), 1).set({ namespace: 'ns', name: 'b' }, 2);
    map.set(objectKey('ns', 'a'), 3);
    assert.equal(map.size, 2);
    assert.equal(map.get({ namespace: 'ns', name: 'a' }), 3);
    assert.ok(map.has(objectKey('ns', 'b')));
    assert.ok(!map.has(objectKey('other', 'a')));
    assert.ok(!map.has(objectKey('', 'ns/a')), 'a namespace and a name never run together');
    assert.deepEqual([...map.keys()], [objectKey('ns', 'a'), objectKey('ns', 'b')]);
    assert.deepEqual([...map.values()], [3, 2]);
    assert.deepEqual(
      [...map],
      [
        [objectKey('ns', 'a'), 3],
        [objectKey('ns', 'b'), 2],
      ],
    );
    assert.ok(map.delete(objectKey('ns', 'a')));
    assert.ok(!map.delete(objectKey('ns', 'a')));
    assert.equal(map.size, 1);
  });
});
