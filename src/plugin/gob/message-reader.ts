// A cursor over the gob message being decoded. Every read checks the bytes left in
// the message first, so a length or count from the wire can never make us read past
// the message or allocate more than the message holds.
import { GobError } from './gob-error.js';

const EMPTY = new Uint8Array(0);
const floatView = new DataView(new ArrayBuffer(8));

export class MessageReader {
  private buf: Uint8Array = EMPTY;
  private pos = 0;

  /** Makes `message` the current message (Go's decoder keeps exactly one). */
  load(message: Uint8Array): void {
    this.buf = message;
    this.pos = 0;
  }

  /** Drops what is left of the current message, as Go does before each top-level value. */
  clear(): void {
    this.load(EMPTY);
  }

  remaining(): number {
    return this.buf.length - this.pos;
  }

  readUintBig(): bigint {
    const first = this.readByte();
    if (first <= 0x7f) return BigInt(first);
    const n = 256 - first;
    if (n > 8) throw new GobError('encoded unsigned integer out of range');
    this.need(n, 'uint data length');
    let v = 0n;
    for (let i = 0; i < n; i++) v = (v << 8n) | BigInt(this.buf[this.pos++] ?? 0);
    return v;
  }

  /** A uint that must fit a JS number (counts, lengths, field deltas, ids). */
  readUint(what: string): number {
    const small = this.readSmallUint();
    if (small !== undefined) return small;
    const v = this.readUintBig();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GobError(`${what} out of range: ${v}`);
    return Number(v);
  }

  readIntBig(): bigint {
    const u = this.readUintBig();
    return u & 1n ? -(u >> 1n) - 1n : u >> 1n;
  }

  readInt(what: string): number {
    const small = this.readSmallUint();
    if (small !== undefined) return small % 2 === 1 ? -(small - 1) / 2 - 1 : small / 2;
    const v = this.readIntBig();
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new GobError(`${what} out of range: ${v}`);
    }
    return Number(v);
  }

  /** The fast path: a uint of at most 6 bytes (below 2^48) read as a number, else nothing consumed. */
  private readSmallUint(): number | undefined {
    const first = this.buf[this.pos];
    if (first === undefined) return undefined;
    if (first <= 0x7f) {
      this.pos++;
      return first;
    }
    const n = 256 - first;
    if (n > 6 || n > this.remaining() - 1) return undefined;
    let v = 0;
    for (let i = 1; i <= n; i++) v = v * 256 + (this.buf[this.pos + i] ?? 0);
    this.pos += n + 1;
    return v;
  }

  /** Passes over a uint (or int, bool, float) without building its value. */
  skipUint(): void {
    const first = this.readByte();
    if (first <= 0x7f) return;
    const n = 256 - first;
    if (n > 8) throw new GobError('encoded unsigned integer out of range');
    this.need(n, 'uint data length');
    this.pos += n;
  }

  readFloat(): number {
    floatView.setBigUint64(0, this.readUintBig(), true);
    return floatView.getFloat64(0, false);
  }

  /** A uint length that must not exceed the bytes left in the message (Go's getLength). */
  readLength(what: string): number {
    const n = this.readUint(what);
    if (n > this.remaining()) {
      throw new GobError(`invalid ${what} ${n}: exceeds input size ${this.remaining()}`);
    }
    return n;
  }

  /** A view of the next n bytes (n already checked by readLength). */
  readView(n: number): Uint8Array {
    this.need(n, 'length');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  skip(n: number): void {
    this.need(n, 'length');
    this.pos += n;
  }

  private readByte(): number {
    const b = this.buf[this.pos];
    if (b === undefined) throw new GobError('unexpected end of message');
    this.pos++;
    return b;
  }

  private need(n: number, what: string): void {
    if (n > this.remaining()) {
      throw new GobError(`invalid ${what} ${n}: exceeds input size ${this.remaining()}`);
    }
  }
}
