// The bytes received on a stream and not yet consumed, and the framing of gob
// messages in them: a uint byte count, then that many bytes.
import { GobError } from './gob-error.js';

export class ByteQueue {
  // Consumed chunks are skipped by index, not shifted off: a message that arrived in
  // many small chunks made every shift move the rest of the array (quadratic).
  private chunks: Uint8Array[] = [];
  /** Index of the first chunk not wholly consumed. */
  private head = 0;
  private headOffset = 0;
  private total = 0;

  get length(): number {
    return this.total;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.total += chunk.length;
  }

  /** The byte at `index` from the front (index < length). */
  peek(index: number): number {
    let i = index + this.headOffset;
    for (let c = this.head; c < this.chunks.length; c++) {
      const chunk = this.chunks[c] ?? EMPTY;
      if (i < chunk.length) return chunk[i] ?? 0;
      i -= chunk.length;
    }
    throw new RangeError(`peek past the end of the queue (${index} >= ${this.total})`);
  }

  /** Removes and returns the first n bytes (n <= length). */
  take(n: number): Uint8Array {
    if (n > this.total) throw new RangeError(`take past the end of the queue (${n} > ${this.total})`);
    const first = this.chunks[this.head];
    if (first !== undefined && this.headOffset + n <= first.length) {
      const out = first.subarray(this.headOffset, this.headOffset + n);
      this.drop(n);
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.chunks[this.head];
      if (chunk === undefined) break;
      const count = Math.min(n - filled, chunk.length - this.headOffset);
      out.set(chunk.subarray(this.headOffset, this.headOffset + count), filled);
      filled += count;
      this.drop(count);
    }
    return out;
  }

  private drop(n: number): void {
    this.total -= n;
    this.headOffset += n;
    while (this.head < this.chunks.length && this.headOffset >= (this.chunks[this.head]?.length ?? 0)) {
      this.headOffset -= this.chunks[this.head]?.length ?? 0;
      this.chunks[this.head] = EMPTY; // let the consumed bytes be collected
      this.head++;
    }
    // Forget the consumed slots once they are the larger part: amortised O(1) per chunk.
    if (this.head === this.chunks.length) {
      this.chunks = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }
}

const EMPTY = new Uint8Array(0);

/**
 * Takes the next complete message off the queue, or returns undefined when it has not
 * all arrived yet. A length prefix we refuse is fatal: the stream has lost its framing.
 */
export function takeMessage(queue: ByteQueue, maxMessageBytes: number): Uint8Array | undefined {
  if (queue.length === 0) return undefined;
  const first = queue.peek(0);
  let prefix = 1;
  let size = first;
  if (first > 0x7f) {
    const digits = 256 - first;
    if (digits > 8) throw new GobError('invalid message length prefix', { fatal: true });
    if (queue.length < 1 + digits) return undefined;
    let big = 0n;
    for (let i = 1; i <= digits; i++) big = (big << 8n) | BigInt(queue.peek(i));
    if (big > BigInt(maxMessageBytes)) {
      throw new GobError(`message of ${big} bytes exceeds the limit of ${maxMessageBytes} bytes`, {
        fatal: true,
      });
    }
    prefix = 1 + digits;
    size = Number(big);
  }
  if (size > maxMessageBytes) {
    throw new GobError(`message of ${size} bytes exceeds the limit of ${maxMessageBytes} bytes`, {
      fatal: true,
    });
  }
  if (queue.length < prefix + size) return undefined;
  queue.take(prefix);
  return queue.take(size);
}
