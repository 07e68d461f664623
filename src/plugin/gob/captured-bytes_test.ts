// Every byte sequence in docs/upstream/plugin-protocol.md#captured-bytes, and Go's own encodings
// (testing/go-fixtures.ts): ours must be byte-identical where we make Go's choices,
// and Go's must decode to the values Go encoded where Go chooses differently.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GobDecoder } from './decoder.js';
import { GobEncoder, gobItem } from './encoder.js';
import { goBytes, goInt, goString, goStruct } from './go-types.js';
import type { GoType } from './go-types.js';
import {
  GOB_NAMES,
  driverOptionsInterface,
  driverRegistry,
  mcnFlagSliceType,
  rpcFlagsType,
} from '../driver-types.js';
import { toGoFlag } from '../driver-service.js';
import { EMPTY_STRUCT, emptyStructType, rpcRequestType, rpcResponseType } from '../net-rpc-types.js';
import { fixtureBytes } from '../testing/go-fixtures.js';
import type { GoFixtureName } from '../testing/go-fixtures.js';
import { specBytes, toHex } from '../testing/hex.js';
import { everythingType, sampleEverything, sampleRegistry } from '../testing/sample-types.js';

const REQUEST_DEF = `2f ff81 03 01 01 07"Request" 01 ff82 00 01 02 01 0d"ServiceMethod" 01 0c 00 01 03"Seq" 01 06 00 00 00`;
const RESPONSE_DEF =
  `3a ff81 03 01 01 08"Response" 01 ff82 00 01 03 01 0d"ServiceMethod" 01 0c 00 01 03"Seq" 01 06 00` +
  ` 01 05"Error" 01 0c 00 00 00`;
const EMPTY_STRUCT_DEF = '0a ff83 03 01 02 ff84 00 00 00';
const EMPTY_STRUCT_VALUE = '03 ff84 00';
const FLAG_SLICE_DEF = '0c ff85 02 01 02 ff86 00 01 10 00 00';
const STRING_FLAG_ELEMENT = `13"*mcnflag.StringFlag" ff88 1d 01 07"fake-kc" 01 02"kc" 01 07"FAKE_KC" 01 04"dflt" 00`;

const hex = (spec: string): string => toHex(specBytes(spec));

function decodeAll(
  bytes: Uint8Array,
  types: ReadonlyArray<GoType | undefined>,
  registry = driverRegistry(),
): unknown[] {
  const decoder = new GobDecoder(registry);
  decoder.push(bytes);
  const out = types.map((type) => {
    const result = type === undefined ? decoder.skip() : decoder.read(type);
    assert.ok(result.done, 'value should be complete');
    return result.value;
  });
  assert.equal(decoder.buffered, 0, 'every byte should be consumed');
  return out;
}

describe('client → plugin captures (what rancher-machine sends)', () => {
  it('encodes the Request definition and the first call byte for byte', () => {
    const enc = new GobEncoder(driverRegistry());
    const first = enc.encode(rpcRequestType, { ServiceMethod: 'RPCServerDriver.GetVersion', Seq: 0n });
    assert.equal(toHex(first), hex(`${REQUEST_DEF} 1f ff82 01 1a"RPCServerDriver.GetVersion" 00`));
    // Later calls reuse the definition and carry their Seq.
    const later = enc.encode(rpcRequestType, { ServiceMethod: 'RPCServerDriver.GetVersion', Seq: 5n });
    assert.equal(toHex(later), hex(`21 ff82 01 1a"RPCServerDriver.GetVersion" 01 05 00`));
  });

  it('encodes the struct{} argument byte for byte', () => {
    const enc = new GobEncoder(driverRegistry());
    enc.encode(rpcRequestType, { ServiceMethod: 'RPCServerDriver.GetVersion', Seq: 0n });
    assert.equal(
      toHex(enc.encode(emptyStructType, EMPTY_STRUCT)),
      hex(`${EMPTY_STRUCT_DEF} ${EMPTY_STRUCT_VALUE}`),
    );
    assert.equal(toHex(enc.encode(emptyStructType, EMPTY_STRUCT)), hex(EMPTY_STRUCT_VALUE));
  });

  it('encodes the SetConfigRaw argument ([]byte) byte for byte', () => {
    const json = Buffer.alloc(173, 'x');
    const bytes = new GobEncoder(driverRegistry()).encode(goBytes, json);
    assert.equal(toHex(bytes), hex('ffb1 0a 00 ffad') + json.toString('hex'));
  });

  it('decodes the captured request sequence', () => {
    const bytes = specBytes(
      `${REQUEST_DEF} 1f ff82 01 1a"RPCServerDriver.GetVersion" 00 ${EMPTY_STRUCT_DEF} ${EMPTY_STRUCT_VALUE}` +
        ` 21 ff82 01 1a"RPCServerDriver.GetVersion" 01 05 00 ${EMPTY_STRUCT_VALUE}`,
    );
    assert.deepEqual(decodeAll(bytes, [rpcRequestType, emptyStructType, rpcRequestType, emptyStructType]), [
      { ServiceMethod: 'RPCServerDriver.GetVersion', Seq: 0n },
      {},
      { ServiceMethod: 'RPCServerDriver.GetVersion', Seq: 5n },
      {},
    ]);
  });

  it('writes RPCFlags map entries as captured', () => {
    const bytes = new GobEncoder(driverRegistry()).encode(driverOptionsInterface, {
      name: GOB_NAMES.rpcFlags,
      value: {
        Values: new Map([
          ['fake-kc', { name: 'string', value: 'KC' }],
          ['fake-cpu', { name: 'int', value: 4 }],
        ]),
      },
    });
    assert.ok(toHex(bytes).includes(hex(`07"fake-kc" 06"string" 0c 04 00 02"KC"`)));
    assert.ok(toHex(bytes).includes(hex(`08"fake-cpu" 03"int" 04 02 00 08`)));
  });
});

describe('plugin → client captures (what we answer)', () => {
  it('answers GetVersion, a string, an error and GetCreateFlags byte for byte', () => {
    const enc = new GobEncoder(driverRegistry());
    const header = (seq: bigint, method: string, error = '') =>
      gobItem(rpcResponseType, { ServiceMethod: `RPCServerDriver.${method}`, Seq: seq, Error: error });

    const version = enc.encodeAll([header(0n, 'GetVersion'), gobItem(goInt, 1)]);
    assert.equal(
      toHex(version),
      hex(`${RESPONSE_DEF} 1f ff82 01 1a"RPCServerDriver.GetVersion" 00 03 04 00 02`),
    );

    const name = enc.encodeAll([header(3n, 'GetMachineName'), gobItem(goString, 'm1')]);
    assert.ok(toHex(name).endsWith(hex(`05 0c 00 02"m1"`)));

    const error = enc.encodeAll([
      header(11n, 'GetIPv6', 'IPv6 address is not set'),
      gobItem(emptyStructType, EMPTY_STRUCT),
    ]);
    assert.equal(
      toHex(error),
      hex(
        `37 ff82 01 17"RPCServerDriver.GetIPv6" 01 0b 01 17"IPv6 address is not set" 00` +
          ` ${EMPTY_STRUCT_DEF} ${EMPTY_STRUCT_VALUE}`,
      ),
    );

    const flags = enc.encodeAll([
      header(12n, 'GetCreateFlags'),
      gobItem(mcnFlagSliceType, [
        toGoFlag({ kind: 'string', name: 'fake-kc', usage: 'kc', envVar: 'FAKE_KC', value: 'dflt' }),
      ]),
    ]);
    const flagsHex = toHex(flags);
    assert.ok(flagsHex.includes(hex(FLAG_SLICE_DEF)), 'slice-of-interface definition');
    assert.ok(flagsHex.includes(hex(STRING_FLAG_ELEMENT)), 'flag element');
    // Our StringFlag definition (id 68) is the very one Go sent with id 68 in "flags".
    const stringFlagDef = hex(
      `ff87 03 01 01 0a"StringFlag" 01 ff88 00 01 04 01 04"Name" 01 0c 00 01 05"Usage" 01 0c 00` +
        ` 01 06"EnvVar" 01 0c 00 01 05"Value" 01 0c 00 00 00`,
    );
    assert.ok(flagsHex.includes(stringFlagDef));
    assert.ok(toHex(fixtureBytes('flags')).includes(stringFlagDef));
  });

  it('decodes the captured answers', () => {
    const bytes = specBytes(
      `${RESPONSE_DEF} 1f ff82 01 1a"RPCServerDriver.GetVersion" 00 03 04 00 02` +
        ` 37 ff82 01 17"RPCServerDriver.GetIPv6" 01 0b 01 17"IPv6 address is not set" 00` +
        ` ${EMPTY_STRUCT_DEF} ${EMPTY_STRUCT_VALUE}`,
    );
    assert.deepEqual(decodeAll(bytes, [rpcResponseType, goInt, rpcResponseType, undefined]), [
      { ServiceMethod: 'RPCServerDriver.GetVersion', Seq: 0n, Error: '' },
      1,
      { ServiceMethod: 'RPCServerDriver.GetIPv6', Seq: 11n, Error: 'IPv6 address is not set' },
      undefined,
    ]);
  });
});

describe("Go's own encodings (ids and message layout chosen by Go)", () => {
  const cases: Array<[GoFixtureName, Array<GoType | undefined>, unknown[]]> = [
    [
      'request-getversion',
      [rpcRequestType, emptyStructType],
      [{ ServiceMethod: 'RPCServerDriver.GetVersion', Seq: 0n }, {}],
    ],
    [
      'two-requests',
      [rpcRequestType, emptyStructType, rpcRequestType, undefined],
      [
        { ServiceMethod: 'RPCServerDriver.Heartbeat', Seq: 1n },
        {},
        { ServiceMethod: 'RPCServerDriver.GetState', Seq: 300n },
        undefined,
      ],
    ],
    [
      'response-version',
      [rpcResponseType, goInt],
      [{ ServiceMethod: 'RPCServerDriver.GetVersion', Seq: 0n, Error: '' }, 1],
    ],
    [
      'response-error',
      [rpcResponseType, emptyStructType],
      [{ ServiceMethod: 'RPCServerDriver.GetIPv6', Seq: 11n, Error: 'IPv6 address is not set' }, {}],
    ],
    [
      'response-string',
      [rpcResponseType, goString],
      [{ ServiceMethod: 'RPCServerDriver.GetMachineName', Seq: 3n, Error: '' }, 'm1'],
    ],
    ['config-raw', [goBytes], [new Uint8Array(Buffer.from('{"MachineName":"m1"}'))]],
    ['state-running', [goInt], [1]],
    [
      'flags',
      [mcnFlagSliceType],
      [
        [
          {
            name: '*mcnflag.StringFlag',
            value: { Name: 'fake-kc', Usage: 'kc', EnvVar: 'FAKE_KC', Value: 'dflt' },
          },
          {
            name: '*mcnflag.IntFlag',
            value: { Name: 'fake-cpu', Usage: 'cpus', EnvVar: 'FAKE_CPU', Value: 2 },
          },
          { name: '*mcnflag.BoolFlag', value: { Name: 'fake-debug', Usage: 'debug', EnvVar: '' } },
          {
            name: '*mcnflag.StringSliceFlag',
            value: { Name: 'fake-list', Usage: 'list', EnvVar: '', Value: ['a', 'b'] },
          },
        ],
      ],
    ],
    [
      'rpcflags-one',
      [driverOptionsInterface],
      [
        {
          name: '*rpcdriver.RPCFlags',
          value: { Values: new Map([['fake-kc', { name: 'string', value: 'KC' }]]) },
        },
      ],
    ],
    [
      // The inner StringFlag's definition sits in the middle of the outer value's message.
      'rpcflags-nested',
      [driverOptionsInterface],
      [
        {
          name: '*rpcdriver.RPCFlags',
          value: {
            Values: new Map([
              [
                'inner',
                {
                  name: '*rpcdriver.RPCFlags',
                  value: {
                    Values: new Map([
                      [
                        'flag',
                        {
                          name: '*mcnflag.StringFlag',
                          value: { Name: 'n', Usage: '', EnvVar: '', Value: 'v' },
                        },
                      ],
                    ]),
                  },
                },
              ],
            ]),
          },
        },
      ],
    ],
  ];
  for (const [name, types, expected] of cases) {
    it(`decodes ${name}`, () => assert.deepEqual(decodeAll(fixtureBytes(name), types), expected));
  }

  it('decodes rpcflags-all (every type RPCFlags.Values carries)', () => {
    const [value] = decodeAll(fixtureBytes('rpcflags-all'), [driverOptionsInterface]);
    const values = (value as { value: { Values: Map<string, unknown> } }).value.Values;
    assert.deepEqual(
      new Map([...values].sort()),
      new Map([
        ['b', { name: 'bool', value: true }],
        ['i', { name: 'int', value: 4 }],
        ['l', { name: '[]string', value: ['x', 'y'] }],
        ['neg', { name: 'int', value: -3 }],
        ['s', { name: 'string', value: 'str' }],
      ]),
    );
  });

  it('decodes everything and its zero value', () => {
    assert.deepEqual(decodeAll(fixtureBytes('everything'), [everythingType], sampleRegistry()), [
      sampleEverything(),
    ]);
    const [zero] = decodeAll(fixtureBytes('everything-zero'), [everythingType], sampleRegistry());
    assert.deepEqual(zero, {
      Yes: false,
      Int: 0,
      Neg: 0n,
      Big: 0n,
      Float: 0,
      Text: '',
      Raw: new Uint8Array(0),
      List: [],
      Counts: new Map(),
      Inner: { Name: '', Count: 0 },
      Ptr: null,
      Any: null,
      Nothing: null,
      Skipped: '',
      Inners: [],
    });
  });

  it('skips every fixture value without a local type (Go Decode(nil))', () => {
    for (const name of ['everything', 'flags', 'rpcflags-nested', 'rpcflags-all'] as const) {
      assert.deepEqual(decodeAll(fixtureBytes(name), [undefined], sampleRegistry()), [undefined]);
    }
  });

  it('re-encodes the decoded values to bytes Go decodes the same (round trip through our encoder)', () => {
    for (const [name, types] of cases) {
      const values = decodeAll(fixtureBytes(name), types);
      const enc = new GobEncoder(driverRegistry());
      const again = enc.encodeAll(
        types.flatMap((t, i) => (t === undefined ? [] : [{ type: t, value: values[i] }])),
      );
      const kept = types.filter((t) => t !== undefined);
      assert.deepEqual(
        decodeAll(again, kept),
        values.filter((_, i) => types[i] !== undefined),
        name,
      );
    }
  });
});

describe('matching by name, as Go does', () => {
  it('fills fields by name whatever their order, and drops unknown ones', () => {
    const sent = { ServiceMethod: 'A.B', Seq: 9n, Error: 'boom' };
    const bytes = new GobEncoder(driverRegistry()).encode(rpcResponseType, sent);
    // Request has no Error field: it is read and dropped.
    assert.deepEqual(decodeAll(bytes, [rpcRequestType]), [{ ServiceMethod: 'A.B', Seq: 9n }]);
  });

  it('refuses a struct with no field in common', () => {
    const bytes = new GobEncoder(driverRegistry()).encode(rpcFlagsType, { Values: new Map() });
    const decoder = new GobDecoder(driverRegistry());
    decoder.push(bytes);
    // RPCFlags with an empty map has no field set, so nothing was matched only by type.
    assert.throws(() => decoder.read(rpcRequestType), /no fields matched compiling decoder for Request/);
  });

  it('refuses a field of another type', () => {
    const bytes = new GobEncoder(driverRegistry()).encode(rpcRequestType, { ServiceMethod: 'x', Seq: 1n });
    const decoder = new GobDecoder(driverRegistry());
    decoder.push(bytes);
    const seqAsText = goStruct('Request', { ServiceMethod: goString, Seq: goString });
    assert.throws(() => decoder.read(seqAsText), /wrong type \(string\) for received field Request\.Seq/);
    const decoder2 = new GobDecoder(driverRegistry());
    decoder2.push(new GobEncoder(driverRegistry()).encode(goString, 'x'));
    assert.throws(() => decoder2.read(goInt), /decoding into local type int, received remote type string/);
    const decoder3 = new GobDecoder(driverRegistry());
    decoder3.push(new GobEncoder(driverRegistry()).encode(goString, 'x'));
    assert.throws(
      () => decoder3.read(driverOptionsInterface),
      /can only be decoded from remote interface type/,
    );
  });

  it('refuses an interface name nobody registered', () => {
    const registry = sampleRegistry();
    const bytes = new GobEncoder(registry).encode(everythingType, sampleEverything());
    const decoder = new GobDecoder(driverRegistry());
    decoder.push(bytes);
    assert.throws(() => decoder.read(everythingType), /name not registered for interface: "\*main\.Inner"/);
  });
});
