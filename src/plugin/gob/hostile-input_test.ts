// Broken and hostile input: whatever the bytes, the decoder returns values, asks for
// more bytes, or throws a GobError; it never throws anything else, never spins, never
// overflows the stack and never allocates what the input only claims to hold.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ByteWriter } from './byte-writer.js';
import { GobDecoder } from './decoder.js';
import { GobEncoder } from './encoder.js';
import { GobError } from './gob-error.js';
import { goEmptyStruct, goInt, goInterface, goMap, goSlice, goString, goStruct } from './go-types.js';
import type { GoType } from './go-types.js';
import type { InterfaceRegistry } from './interface-registry.js';
import { driverOptionsInterface, mcnFlagSliceType } from '../driver-types.js';
import { emptyStructType, rpcRequestType, rpcResponseType } from '../net-rpc-types.js';
import { GO_FIXTURES, fixtureBytes } from '../testing/go-fixtures.js';
import type { GoFixtureName } from '../testing/go-fixtures.js';
import { everythingType, sampleEverything, sampleRegistry } from '../testing/sample-types.js';

const registry = sampleRegistry();
const stringMapStruct = goStruct('M', { V: goMap(goString, goString) });

/** The types each fixture holds, in order (undefined: read and drop). */
const FIXTURE_TYPES: Record<GoFixtureName, Array<GoType | undefined>> = {
  'config-raw': [goSlice(goInt)],
  everything: [everythingType],
  'everything-zero': [everythingType],
  flags: [mcnFlagSliceType],
  'request-getversion': [rpcRequestType, emptyStructType],
  'response-error': [rpcResponseType, undefined],
  'response-string': [rpcResponseType, goString],
  'response-version': [rpcResponseType, goInt],
  'rpcflags-all': [driverOptionsInterface],
  'rpcflags-nested': [driverOptionsInterface],
  'rpcflags-one': [driverOptionsInterface],
  'state-running': [goInt],
  'two-requests': [rpcRequestType, emptyStructType, rpcRequestType, undefined],
};
// config-raw holds []byte; reading it as []int must fail cleanly too, so it stays.
const FIXTURES = Object.keys(GO_FIXTURES) as GoFixtureName[];

type Outcome = { values: unknown[]; errors: GobError[]; incomplete: boolean };

/**
 * Reads values the way the RPC server does: after a recoverable error, go on with
 * the next message; stop when more bytes are needed or the stream is broken.
 */
function attempt(
  chunks: Uint8Array[],
  types: ReadonlyArray<GoType | undefined>,
  reg: InterfaceRegistry = registry,
): Outcome {
  const decoder = new GobDecoder(reg);
  const out: Outcome = { values: [], errors: [], incomplete: false };
  let reads = 0;
  let next = 0;
  for (const chunk of chunks) {
    decoder.push(chunk);
    while (reads++ < 200) {
      const type = types[next % types.length];
      try {
        const result = type === undefined ? decoder.skip() : decoder.read(type);
        if (!result.done) {
          out.incomplete = true;
          break;
        }
        out.incomplete = false;
        out.values.push(result.value);
      } catch (e) {
        if (!(e instanceof GobError)) throw e;
        out.errors.push(e);
        if (e.fatal) return out;
      }
      next++;
      if (decoder.idle) break;
    }
  }
  return out;
}

/** Splits a stream into its messages: [length prefix, body]. */
function messages(bytes: Uint8Array): Array<[Uint8Array, Uint8Array]> {
  const out: Array<[Uint8Array, Uint8Array]> = [];
  let at = 0;
  while (at < bytes.length) {
    const first = bytes[at] ?? 0;
    const prefix = first <= 0x7f ? 1 : 1 + (256 - first);
    let size = 0;
    if (first <= 0x7f) size = first;
    else for (let i = 1; i < prefix; i++) size = size * 256 + (bytes[at + i] ?? 0);
    out.push([bytes.subarray(at, at + prefix), bytes.subarray(at + prefix, at + prefix + size)]);
    at += prefix + size;
  }
  return out;
}

function framed(body: Uint8Array): Uint8Array {
  const w = new ByteWriter();
  w.writeCounted(body);
  return w.bytes().slice();
}

/** One message built with the writer (for hand-made hostile input). */
function message(build: (w: ByteWriter) => void): Uint8Array {
  const w = new ByteWriter();
  build(w);
  return framed(w.bytes());
}

function expectGobError(bytes: Uint8Array, type: GoType | undefined, pattern: RegExp, reg = registry): void {
  const started = performance.now();
  const outcome = attempt([bytes], [type], reg);
  assert.equal(outcome.values.length, 0, 'no value should come out');
  assert.ok(
    outcome.errors.length > 0,
    `expected a GobError, got ${outcome.incomplete ? 'incomplete' : 'nothing'}`,
  );
  assert.match(outcome.errors[0]?.message ?? '', pattern);
  assert.ok(performance.now() - started < 1000, 'must fail fast');
}

describe('truncated input', () => {
  const streams: Array<[string, Uint8Array, Array<GoType | undefined>]> = [
    ...FIXTURES.filter((n) => n !== 'config-raw').map(
      (n): [string, Uint8Array, Array<GoType | undefined>] => [n, fixtureBytes(n), FIXTURE_TYPES[n]],
    ),
    [
      'ours: everything',
      new GobEncoder(registry).encode(everythingType, sampleEverything()),
      [everythingType],
    ],
  ];

  it('a stream cut at every offset waits for more, then decodes what Go sent', () => {
    for (const [name, bytes, types] of streams) {
      const whole = attempt([bytes], types);
      assert.equal(whole.errors.length, 0, name);
      for (let cut = 0; cut < bytes.length; cut++) {
        const prefix = attempt([bytes.subarray(0, cut)], types);
        assert.equal(prefix.errors.length, 0, `${name} cut at ${cut}: ${prefix.errors[0]?.message}`);
        assert.ok(prefix.values.length < whole.values.length, `${name} cut at ${cut}`);
        const resumed = attempt([bytes.subarray(0, cut), bytes.subarray(cut)], types);
        assert.deepEqual(resumed.values, whole.values, `${name} resumed after ${cut}`);
      }
    }
  });

  it('a message whose content is cut (length fixed up) gives values or GobErrors only', () => {
    for (const [name, bytes, types] of streams) {
      const parts = messages(bytes);
      parts.forEach(([, body], index) => {
        for (let cut = 0; cut < body.length; cut++) {
          const chunks = parts.map(([prefix, b], i) =>
            i === index ? framed(b.subarray(0, cut)) : Buffer.concat([prefix, b]),
          );
          attempt(chunks, types); // throws if anything but a GobError escapes
        }
      });
      assert.ok(parts.length > 0, name);
    }
  });
});

describe('lengths and counts the input cannot hold', () => {
  it('a message length over the limit breaks the stream (fatal), before any buffering', () => {
    const huge = Uint8Array.of(0xf8, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
    const outcome = attempt([huge], [rpcRequestType]);
    assert.ok(outcome.errors[0]?.fatal);
    const justOver = new ByteWriter();
    justOver.writeUint(10 * 1024 * 1024 + 1);
    assert.ok(attempt([justOver.bytes()], [rpcRequestType]).errors[0]?.fatal);
    // A broken stream stays broken.
    const decoder = new GobDecoder(registry);
    decoder.push(huge);
    assert.throws(() => decoder.read(rpcRequestType), GobError);
    decoder.push(new GobEncoder(registry).encode(goInt, 1));
    assert.throws(() => decoder.read(goInt), /exceeds the limit/);
  });

  it('a string, []byte or name length past the message', () => {
    const str = message((w) => {
      w.writeInt(6);
      w.writeUint(0);
      w.writeUint(2 ** 40);
    });
    expectGobError(str, goString, /invalid string length 1099511627776: exceeds input size 0/);
    const bytes = message((w) => {
      w.writeInt(5);
      w.writeUint(0);
      w.writeUint(1000);
      w.writeRaw(new Uint8Array(10));
    });
    expectGobError(bytes, undefined, /exceeds input size 10/);
    const name = message((w) => {
      w.writeInt(8);
      w.writeUint(0);
      w.writeUint(2 ** 31);
    });
    expectGobError(name, driverOptionsInterface, /interface type name length/);
    const longName = message((w) => {
      w.writeInt(8);
      w.writeUint(0);
      w.writeCounted(new Uint8Array(2000).fill(0x41));
    });
    expectGobError(longName, driverOptionsInterface, /name too long \(2000 bytes\)/);
  });

  it('a slice or map count of 2^50 fails at once, without allocating', () => {
    const sliceDef = messages(new GobEncoder(registry).encode(goSlice(goString), []))[0];
    assert.ok(sliceDef);
    const slice = Buffer.concat([
      ...sliceDef, // the definition only
      message((w) => {
        w.writeInt(65);
        w.writeUint(0);
        w.writeUint(2 ** 50);
        w.writeCounted(Buffer.from('x'));
      }),
    ]);
    expectGobError(slice, goSlice(goString), /length exceeds input size \(1125899906842624 elements\)/);
    expectGobError(slice, undefined, /length exceeds input size/);
    const mapDef = messages(
      new GobEncoder(registry).encode(stringMapStruct, {
        V: new Map([['a', 'b']]),
      }),
    );
    const mapBytes = Buffer.concat([
      ...mapDef.slice(0, -1).map(([p, b]) => Buffer.concat([p, b])),
      message((w) => {
        w.writeInt(65);
        w.writeUint(1);
        w.writeUint(2 ** 50);
        w.writeCounted(Buffer.from('k'));
        w.writeCounted(Buffer.from('v'));
      }),
    ]);
    expectGobError(mapBytes, stringMapStruct, /decoding map: length exceeds input size/);
  });

  it('a field number, delta or type id out of range', () => {
    const def = messages(new GobEncoder(registry).encode(rpcRequestType, { ServiceMethod: '', Seq: 0n }))[0];
    assert.ok(def);
    const defBytes = Buffer.concat(def);
    const badDelta = Buffer.concat([
      defBytes,
      message((w) => {
        w.writeInt(65);
        w.writeUint(3);
      }),
    ]);
    expectGobError(badDelta, rpcRequestType, /field number out of range in Request/);
    expectGobError(
      Buffer.concat([defBytes, message((w) => (w.writeInt(65), w.writeUint(2 ** 52)))]),
      undefined,
      /field number out of range/,
    );
    expectGobError(
      message((w) => w.writeInt(2 ** 40)),
      rpcRequestType,
      /unknown type id 1099511627776/,
    );
    expectGobError(
      message((w) => w.writeUint(2n ** 64n - 1n)),
      rpcRequestType,
      /type id out of range/,
    );
    expectGobError(
      message((w) => w.writeRaw(Uint8Array.of(0x80))),
      rpcRequestType,
      /out of range/,
    );
  });
});

describe('type ids and definitions', () => {
  it('refuses values of undefined types', () => {
    expectGobError(
      message((w) => (w.writeInt(99), w.writeUint(0))),
      goInt,
      /unknown type id 99/,
    );
    expectGobError(
      message((w) => (w.writeInt(9), w.writeUint(0))),
      undefined,
      /unknown type id 9/,
    );
    expectGobError(
      message((w) => (w.writeInt(17), w.writeUint(0))),
      goInt,
      /decoding into local type int/,
    );
  });

  it('refuses a field whose type was never defined, when it is used', () => {
    // struct S { A <id 60> } defined, 60 never is.
    const enc = new GobEncoder(registry);
    const bytes = messages(enc.encode(goStruct('S', { A: goInt }), { A: 1 }));
    const def = bytes[0]?.[1];
    assert.ok(def);
    const patched = Buffer.from(def);
    // The field's type id (int, 04) is the byte after "A" and its delta 01.
    const at = patched.indexOf(Buffer.from([0x01, 0x41, 0x01, 0x04]));
    patched[at + 3] = 60 * 2; // an id nobody defined (below 64, not a basic one)
    const stream = Buffer.concat([
      framed(patched),
      message((w) => (w.writeInt(65), w.writeUint(1), w.writeInt(1), w.writeUint(0))),
    ]);
    expectGobError(stream, undefined, /unknown type id 60/);
    expectGobError(stream, goStruct('S', { A: goInt }), /wrong type \(int\) for received field S\.A/);
  });

  it('refuses redefinitions, reserved ids and definitions of no or two kinds', () => {
    const def = messages(new GobEncoder(registry).encode(goEmptyStruct, {}))[0];
    assert.ok(def);
    const once = Buffer.concat(def);
    expectGobError(Buffer.concat([once, once]), goEmptyStruct, /duplicate type received \(type id 65\)/);
    const reserved = Buffer.from(def[1]);
    reserved[0] = 0x1f; // -16: wireType's own id
    expectGobError(framed(reserved), goEmptyStruct, /duplicate type received \(type id 16\)/);
    expectGobError(
      message((w) => (w.writeInt(-70), w.writeUint(0))),
      goEmptyStruct,
      /sets 0 kinds/,
    );
    const twoKinds = message((w) => {
      w.writeInt(-70);
      w.writeUint(2); // SliceT
      w.writeUint(1);
      w.writeUint(2);
      w.writeInt(70);
      w.writeUint(0);
      w.writeUint(1);
      w.writeInt(2);
      w.writeUint(0);
      w.writeUint(2); // MapT
      w.writeUint(1);
      w.writeUint(2);
      w.writeInt(71);
      w.writeUint(0);
      w.writeUint(1);
      w.writeInt(6);
      w.writeUint(1);
      w.writeInt(6);
      w.writeUint(0);
      w.writeUint(0);
    });
    expectGobError(twoKinds, goEmptyStruct, /sets 2 kinds/);
  });

  it('bounds how many definitions one stream may send', () => {
    const defs: Uint8Array[] = [];
    for (let id = 70; id < 70 + 20; id++) {
      defs.push(
        message(
          (w) => (
            w.writeInt(-id),
            w.writeUint(2),
            w.writeUint(1),
            w.writeUint(2),
            w.writeInt(id),
            w.writeUint(0),
            w.writeUint(1),
            w.writeInt(2),
            w.writeUint(0),
            w.writeUint(0)
          ),
        ),
      );
    }
    const decoder = new GobDecoder(registry, { maxTypeDefinitions: 10 });
    decoder.push(Buffer.concat(defs));
    assert.throws(() => decoder.read(goInt), /more than 10 type definitions/);
    // And how many bytes they may take in all.
    const wide = goStruct(
      'Wide',
      Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`Field${i}`, goInt])),
    );
    const small = new GobDecoder(registry, { maxDefinitionBytes: 200 });
    small.push(new GobEncoder(registry).encode(wide, {}));
    assert.throws(() => small.read(wide), /type definitions take more than 200 bytes/);
  });
});

describe('deep nesting', () => {
  it('a self-referencing slice type nested 100 000 deep fails at the depth bound', () => {
    // type T []T, then a value nested 100 000 levels deep.
    const def = message((w) => {
      w.writeInt(-65);
      w.writeUint(2);
      w.writeUint(1);
      w.writeUint(2);
      w.writeInt(65);
      w.writeUint(0);
      w.writeUint(1);
      w.writeInt(65);
      w.writeUint(0);
      w.writeUint(0);
    });
    const value = message((w) => {
      w.writeInt(65);
      w.writeUint(0);
      for (let i = 0; i < 100_000; i++) w.writeUint(1);
      w.writeUint(0);
    });
    expectGobError(Buffer.concat([def, value]), undefined, /nested deeper than 64 levels/);
    const local = goSlice(goSlice(goSlice(goInt)));
    expectGobError(Buffer.concat([def, value]), local, /decoding into local type/);
  });

  it('interfaces inside interfaces 500 deep fail at the depth bound', () => {
    const nest = goSlice(goInterface());
    const reg = sampleRegistry().register('nest', nest);
    let value: unknown = [];
    for (let i = 0; i < 500; i++) value = [{ name: 'nest', value }];
    const bytes = new GobEncoder(reg, { maxDepth: 10_000 }).encode(nest, value as never);
    expectGobError(bytes, nest, /nested deeper than 64 levels/, reg);
    // Dropping an interface skips its value by byte count, without descending (as Go does).
    assert.deepEqual(attempt([bytes], [undefined], reg).values, [undefined]);
  });
});

describe('fuzzing (bounded)', () => {
  const anyTypes: Array<GoType | undefined> = [
    rpcRequestType,
    emptyStructType,
    driverOptionsInterface,
    mcnFlagSliceType,
    everythingType,
    undefined,
  ];

  it('random bytes, in random chunks', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), fc.array(fc.nat(), { maxLength: 4 }), (bytes, cuts) => {
        const borders = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let from = 0;
        for (const to of [...borders, bytes.length]) {
          chunks.push(bytes.subarray(from, to));
          from = to;
        }
        attempt(chunks, anyTypes);
      }),
      { numRuns: 3000 },
    );
  });

  it('random bytes after a valid prefix (definitions in place)', () => {
    const prefix = fixtureBytes('everything');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (tail) => {
        attempt([prefix, tail], [everythingType, ...anyTypes]);
      }),
      { numRuns: 1500 },
    );
  });

  it("mutated captures of Go's encodings", () => {
    const mutation = fc.record({
      at: fc.nat(),
      op: fc.constantFrom('set', 'insert', 'delete', 'flip'),
      byte: fc.integer({ min: 0, max: 255 }),
    });
    fc.assert(
      fc.property(
        fc.constantFrom(...FIXTURES),
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        (name, edits) => {
          const bytes = [...fixtureBytes(name)];
          for (const edit of edits) {
            const at = edit.at % (bytes.length + 1);
            if (edit.op === 'set') bytes[at] = edit.byte;
            else if (edit.op === 'insert') bytes.splice(at, 0, edit.byte);
            else if (edit.op === 'delete') bytes.splice(at, 1);
            else bytes[at] = (bytes[at] ?? 0) ^ (1 << (edit.byte % 8));
          }
          const started = performance.now();
          attempt([Uint8Array.from(bytes)], FIXTURE_TYPES[name]);
          assert.ok(performance.now() - started < 1000);
        },
      ),
      { numRuns: 5000 },
    );
  });
});
