// Every kind of value, in random schemas, survives our encoder then our decoder, one
// value at a time and as a stream cut into random chunks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { GobDecoder } from './decoder.js';
import { GobEncoder } from './encoder.js';
import type { GobItem } from './encoder.js';
import { GobError } from './gob-error.js';
import {
  derefType,
  goBool,
  goBytes,
  goEmptyStruct,
  goFloat64,
  goInt,
  goInt64,
  goInterface,
  goMap,
  goPtr,
  goSlice,
  goString,
  goStruct,
  goUint,
  goUint64,
} from './go-types.js';
import type { GoType } from './go-types.js';
import { innerType, sampleEverything, sampleRegistry, everythingType } from '../testing/sample-types.js';

const registry = sampleRegistry();

const basics: GoType[] = [goBool, goInt, goUint, goInt64, goUint64, goFloat64, goString, goBytes];
const keyTypes: GoType[] = [goString, goInt, goUint, goInt64, goBool];
const fieldName = fc.stringMatching(/^[A-Z][A-Za-z0-9]{0,6}$/);

const schemaArb: fc.Arbitrary<GoType> = fc.letrec<{ type: GoType }>((tie) => ({
  type: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...basics),
    fc.constant(goInterface()),
    tie('type').map((elem) => goSlice(elem)),
    fc.tuple(fc.constantFrom(...keyTypes), tie('type')).map(([k, v]) => goMap(k, v)),
    // A nil *interface{} and a pointer to a nil interface look alike here, so no pointers to interfaces.
    tie('type')
      .filter((elem) => derefType(elem).kind !== 'interface')
      .map((elem) => goPtr(elem)),
    fc
      .uniqueArray(fc.tuple(fieldName, tie('type')), { selector: ([name]) => name, maxLength: 5 })
      .map((fields) => goStruct('S', Object.fromEntries(fields))),
  ),
})).type;

/** The interface values the sample registry can carry. */
const interfaceValueArb = fc.oneof(
  fc.constant(null),
  fc.maxSafeInteger().map((value) => ({ name: 'int', value })),
  fc.string().map((value) => ({ name: 'string', value })),
  fc.array(fc.string(), { maxLength: 3 }).map((value) => ({ name: '[]string', value })),
  fc
    .record({ Name: fc.string(), Count: fc.maxSafeInteger() })
    .map((value) => ({ name: '*main.Inner', value: { ...value } })),
);

/** Values of a schema; `inField` allows nil pointers (Go cannot send them elsewhere). */
function valueArb(type: GoType, inField = false): fc.Arbitrary<unknown> {
  switch (type.kind) {
    case 'bool':
      return fc.boolean();
    case 'int':
      return fc.maxSafeInteger();
    case 'uint':
      return fc.maxSafeNat();
    case 'int64':
      return fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n);
    case 'uint64':
      return fc.bigInt(0n, 2n ** 64n - 1n);
    case 'float64':
      // -0 is a zero field, left out like Go does, so it comes back as 0.
      return fc.double().map((d) => (Object.is(d, -0) ? 0 : d));
    case 'string':
      return fc.string({ unit: 'binary', maxLength: 20 });
    case 'bytes':
      return fc.uint8Array({ maxLength: 20 });
    case 'slice':
      return fc.array(valueArb(type.elem), { maxLength: 4 });
    case 'map':
      return fc
        .uniqueArray(fc.tuple(valueArb(type.key), valueArb(type.elem)), {
          selector: ([k]) => k,
          maxLength: 4,
        })
        .map((entries) => new Map(entries));
    case 'struct':
      return fc
        .record(
          Object.fromEntries(
            Object.entries(type.fields).map(([name, field]) => [name, valueArb(field, true)]),
          ),
        )
        .map((record) => ({ ...record })); // fast-check's records have no prototype; decoded structs do
    case 'ptr':
      return inField ? fc.option(valueArb(type.elem), { nil: null }) : valueArb(type.elem);
    case 'interface':
      return interfaceValueArb;
  }
}

const itemArb: fc.Arbitrary<GobItem> = schemaArb.chain((type) =>
  valueArb(type).map((value) => ({ type, value })),
);

function decodeStream(bytes: Uint8Array, types: GoType[], cuts: number[]): unknown[] {
  const decoder = new GobDecoder(registry);
  const out: unknown[] = [];
  const borders = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...borders, bytes.length]) {
    decoder.push(bytes.subarray(from, to));
    from = to;
    for (;;) {
      const type = types[out.length];
      if (type === undefined) break;
      const result = decoder.read(type);
      if (!result.done) break;
      out.push(result.value);
    }
  }
  assert.ok(decoder.idle, 'all input consumed');
  return out;
}

describe('round trips', () => {
  it('every kind, in random schemas', () => {
    fc.assert(
      fc.property(itemArb, ({ type, value }) => {
        const bytes = new GobEncoder(registry).encode(type, value);
        assert.deepEqual(decodeStream(bytes, [type], []), [value]);
      }),
      { numRuns: 500 },
    );
  });

  it('streams of values, definitions sent once, arriving in random chunks', () => {
    fc.assert(
      fc.property(
        fc.array(itemArb, { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (items, cuts) => {
          const encoder = new GobEncoder(registry);
          // Half the values one by one, the rest in one batch: both must make one stream.
          const half = Math.floor(items.length / 2);
          const parts = [
            ...items.slice(0, half).map((item) => encoder.encodeAll([item])),
            encoder.encodeAll(items.slice(half)),
          ];
          const bytes = Buffer.concat(parts);
          assert.deepEqual(
            decodeStream(
              bytes,
              items.map((i) => i.type),
              cuts,
            ),
            items.map((i) => i.value),
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('byte by byte', () => {
    const bytes = new GobEncoder(registry).encode(everythingType, sampleEverything());
    const cuts = Array.from({ length: bytes.length }, (_, i) => i);
    assert.deepEqual(decodeStream(bytes, [everythingType], cuts), [sampleEverything()]);
  });

  it('top-level zero values, nil interfaces and empty structs', () => {
    const items: GobItem[] = [
      { type: goInt, value: 0 },
      { type: goString, value: '' },
      { type: goBytes, value: new Uint8Array(0) },
      { type: goInterface(), value: null },
      { type: goEmptyStruct, value: {} },
      { type: goSlice(innerType), value: [] },
      { type: goPtr(innerType), value: { Name: '', Count: 0 } },
    ];
    const bytes = new GobEncoder(registry).encodeAll(items);
    assert.deepEqual(
      decodeStream(
        bytes,
        items.map((i) => i.type),
        [],
      ),
      items.map((i) => i.value),
    );
  });
});

describe('encoder refusals leave the stream unchanged', () => {
  it('refuses values that do not fit their type, with the path', () => {
    const enc = new GobEncoder(registry);
    assert.throws(() => enc.encode(goInt, 1.5), /cannot encode 1\.5 as int/);
    assert.throws(() => enc.encode(goInt, 2 ** 60), GobError);
    assert.throws(() => enc.encode(goUint, -1), GobError);
    assert.throws(() => enc.encode(goUint64, 2n ** 64n), GobError);
    assert.throws(
      () => enc.encode(everythingType, { ...sampleEverything(), Inner: { Name: 7, Count: 0 } } as never),
      /at Everything\.Inner\.Name/,
    );
    assert.throws(
      () => enc.encode(goInterface(), { name: 'nope', value: 1 }),
      /type not registered for interface: nope/,
    );
    assert.throws(() => enc.encode(goSlice(goPtr(innerType)), [null]), /nil pointer/);
  });

  it('defines nothing when a batch fails half way', () => {
    const enc = new GobEncoder(registry);
    assert.throws(() =>
      enc.encodeAll([
        { type: innerType, value: { Name: 'x', Count: 1 } },
        { type: goInt, value: 0.5 },
      ]),
    );
    // The definition of Inner was never sent, so it must come with the next value.
    const bytes = enc.encode(innerType, { Name: 'x', Count: 1 });
    assert.deepEqual(decodeStream(bytes, [innerType], []), [{ Name: 'x', Count: 1 }]);
  });

  it('refuses messages over the limit', () => {
    const enc = new GobEncoder(registry, { maxMessageBytes: 100 });
    assert.throws(() => enc.encode(goBytes, new Uint8Array(200)), /exceeds the limit of 100/);
  });

  it('refuses cyclic values instead of overflowing the stack', () => {
    const cyclic: unknown[] = [];
    cyclic.push({ name: '[]interface', value: cyclic });
    const reg = sampleRegistry().register('[]interface', goSlice(goInterface()));
    assert.throws(
      () => new GobEncoder(reg).encode(goSlice(goInterface()), cyclic as never),
      /nested deeper than 64 levels/,
    );
  });
});
