// Gob's integer, float and byte-string encodings, appended to a growable buffer.
// uint: values below 128 are one byte; larger ones are a byte holding -(byte count)
// followed by the value big-endian with no leading zeros. int: shifted left one bit,
// with the low bit set (and the other bits complemented) for negative numbers.
// float64: the IEEE bits byte-reversed, sent as a uint (so common floats are short).

const TWO_POW_64 = 1n << 64n;
const SMALL_INT_LIMIT = 2 ** 31;
const floatView = new DataView(new ArrayBuffer(8));

export class ByteWriter {
  private buf: Uint8Array;
  private len = 0;

  constructor(initialCapacity = 64) {
    this.buf = new Uint8Array(initialCapacity);
  }

  get length(): number {
    return this.len;
  }

  /** The bytes written so far (a view; copy it before writing more if it must be kept). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }

  writeByte(b: number): void {
    this.reserve(1);
    this.buf[this.len++] = b;
  }

  writeRaw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
  }

  /** A non-negative safe integer or a bigint in [0, 2^64). */
  writeUint(value: number | bigint): void {
    if (typeof value === 'number' && value < 128) {
      this.writeByte(value);
      return;
    }
    let v = BigInt(value);
    if (v < 0n || v >= TWO_POW_64) throw new RangeError(`uint out of range: ${v}`);
    if (v < 128n) {
      this.writeByte(Number(v));
      return;
    }
    const digits: number[] = [];
    while (v > 0n) {
      digits.push(Number(v & 0xffn));
      v >>= 8n;
    }
    this.reserve(digits.length + 1);
    this.buf[this.len++] = 256 - digits.length;
    for (let i = digits.length - 1; i >= 0; i--) this.buf[this.len++] = digits[i] ?? 0;
  }

  /** A safe integer or a bigint in [-2^63, 2^63). */
  writeInt(value: number | bigint): void {
    if (typeof value === 'number' && Math.abs(value) < SMALL_INT_LIMIT) {
      this.writeUint(value < 0 ? -2 * value - 1 : 2 * value);
      return;
    }
    const v = BigInt(value);
    if (v < -(1n << 63n) || v >= 1n << 63n) throw new RangeError(`int out of range: ${v}`);
    this.writeUint(v < 0n ? ((-v - 1n) << 1n) | 1n : v << 1n);
  }

  writeFloat(value: number): void {
    floatView.setFloat64(0, value, false);
    // Reading the big-endian bits little-endian is gob's byte reversal.
    this.writeUint(floatView.getBigUint64(0, true));
  }

  /** A counted byte string: uint length, then the bytes (gob's string and []byte). */
  writeCounted(bytes: Uint8Array): void {
    this.writeUint(bytes.length);
    this.writeRaw(bytes);
  }

  private reserve(extra: number): void {
    const needed = this.len + extra;
    if (needed <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < needed) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }
}
