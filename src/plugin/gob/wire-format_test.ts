// The integer, float and framing primitives, against gob's documented encodings.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ByteQueue, takeMessage } from './byte-queue.js';
import { ByteWriter } from './byte-writer.js';
import { GobError } from './gob-error.js';
import { MessageReader } from './message-reader.js';
import { toHex } from '../testing/hex.js';

function written(write: (w: ByteWriter) => void): string {
  const w = new ByteWriter(1);
  write(w);
  return toHex(w.bytes());
}

function reader(hex: string): MessageReader {
  const r = new MessageReader();
  r.load(Buffer.from(hex, 'hex'));
  return r;
}

describe('gob uint', () => {
  it('encodes as doc.go shows', () => {
    assert.equal(
      written((w) => w.writeUint(0)),
      '00',
    );
    assert.equal(
      written((w) => w.writeUint(7)),
      '07',
    );
    assert.equal(
      written((w) => w.writeUint(127)),
      '7f',
    );
    assert.equal(
      written((w) => w.writeUint(128)),
      'ff80',
    );
    assert.equal(
      written((w) => w.writeUint(256)),
      'fe0100',
    );
    assert.equal(
      written((w) => w.writeUint(2n ** 64n - 1n)),
      'f8ffffffffffffffff',
    );
  });

  it('round-trips every 64-bit value', () => {
    fc.assert(
      fc.property(fc.bigInt(0n, 2n ** 64n - 1n), (v) => {
        const r = reader(written((w) => w.writeUint(v)));
        assert.equal(r.readUintBig(), v);
        assert.equal(r.remaining(), 0);
      }),
    );
  });

  it('refuses more than 8 bytes and lengths past the message', () => {
    assert.throws(() => reader('f7' + '01'.repeat(9)).readUintBig(), GobError);
    assert.throws(() => reader('80').readUintBig(), /out of range/);
    assert.throws(() => reader('fc0102').readUintBig(), /exceeds input size/);
    assert.throws(() => reader('').readUintBig(), /unexpected end of message/);
  });

  it('keeps JS numbers exact or refuses', () => {
    assert.equal(reader('f9' + '1fffffffffffff').readUint('n'), Number.MAX_SAFE_INTEGER);
    assert.throws(() => reader('f9' + '20000000000000').readUint('count'), /count out of range/);
  });

  it('accepts non-minimal encodings, as Go does', () => {
    assert.equal(reader('fe0005').readUint('n'), 5);
  });
});

describe('gob int', () => {
  it('encodes as doc.go shows (sign in the low bit)', () => {
    assert.equal(
      written((w) => w.writeInt(0)),
      '00',
    );
    assert.equal(
      written((w) => w.writeInt(-1)),
      '01',
    );
    assert.equal(
      written((w) => w.writeInt(1)),
      '02',
    );
    assert.equal(
      written((w) => w.writeInt(-65)),
      'ff81',
    );
    assert.equal(
      written((w) => w.writeInt(65)),
      'ff82',
    );
    assert.equal(
      written((w) => w.writeInt(-129)),
      'fe0101',
    );
    assert.equal(
      written((w) => w.writeInt(-(2n ** 63n))),
      'f8ffffffffffffffff',
    );
  });

  it('round-trips every 64-bit value, as number or bigint', () => {
    fc.assert(
      fc.property(fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n), (v) => {
        assert.equal(reader(written((w) => w.writeInt(v))).readIntBig(), v);
      }),
    );
    fc.assert(
      fc.property(fc.maxSafeInteger(), (v) => {
        assert.equal(reader(written((w) => w.writeInt(v))).readInt('n'), v);
      }),
    );
  });
});

describe('gob float64', () => {
  it('sends the byte-reversed bits as a uint', () => {
    assert.equal(
      written((w) => w.writeFloat(0)),
      '00',
    );
    assert.equal(
      written((w) => w.writeFloat(1)),
      'fef03f',
    );
    assert.equal(
      written((w) => w.writeFloat(17)),
      'fe3140',
    );
  });

  it('round-trips every double, -0 and NaN included', () => {
    fc.assert(
      fc.property(fc.double(), (v) => {
        assert.ok(Object.is(reader(written((w) => w.writeFloat(v))).readFloat(), v));
      }),
    );
  });
});

describe('message framing', () => {
  it('takes whole messages only, across chunk borders', () => {
    const q = new ByteQueue();
    q.push(Uint8Array.of(0x03, 0xaa));
    assert.equal(takeMessage(q, 100), undefined);
    q.push(Uint8Array.of(0xbb));
    assert.equal(takeMessage(q, 100), undefined);
    q.push(Uint8Array.of(0xcc, 0x01));
    assert.equal(toHex(takeMessage(q, 100) ?? new Uint8Array()), 'aabbcc');
    assert.equal(q.length, 1);
  });

  it('reads multi-byte lengths split over chunks', () => {
    const q = new ByteQueue();
    q.push(Uint8Array.of(0xfe));
    assert.equal(takeMessage(q, 1000), undefined);
    q.push(Uint8Array.of(0x01));
    q.push(Uint8Array.of(0x00, ...new Uint8Array(256).fill(7)));
    assert.equal(takeMessage(q, 1000)?.length, 256);
  });

  it('takes a message that arrived one byte per chunk in linear time', () => {
    // 50,000 one-byte chunks: seconds when every consumed chunk shifted the chunk array.
    const size = 50_000;
    const q = new ByteQueue();
    for (const b of [0xfd, (size >> 16) & 0xff, (size >> 8) & 0xff, size & 0xff]) q.push(Uint8Array.of(b));
    for (let i = 0; i < size; i++) q.push(Uint8Array.of(i & 0xff));
    const started = performance.now();
    const message = takeMessage(q, 1024 * 1024);
    const elapsed = performance.now() - started;
    assert.equal(message?.length, size);
    assert.equal(message?.[size - 1], (size - 1) & 0xff);
    assert.equal(q.length, 0);
    assert.ok(elapsed < 500, `took ${elapsed.toFixed(0)} ms`);
  });

  it('refuses a length over the limit before buffering it (fatal)', () => {
    const q = new ByteQueue();
    q.push(Uint8Array.of(0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
    assert.throws(
      () => takeMessage(q, 10 * 1024 * 1024),
      (e: unknown) => e instanceof GobError && e.fatal && /exceeds the limit/.test(e.message),
    );
    const q2 = new ByteQueue();
    q2.push(Uint8Array.of(0x80));
    assert.throws(() => takeMessage(q2, 100), /invalid message length prefix/);
  });
});
