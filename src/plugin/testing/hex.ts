// Hex helpers for tests that compare bytes with the captures in docs/upstream/plugin-protocol.md.

/** Bytes from hex with spaces and quoted ASCII, as in docs/upstream/plugin-protocol.md#captured-bytes. */
export function specBytes(text: string): Uint8Array {
  const out: number[] = [];
  const re = /"([^"]*)"|([0-9a-fA-F]{2})|\s+/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  while (at < text.length && (m = re.exec(text)) !== null) {
    if (m[1] !== undefined) out.push(...Buffer.from(m[1], 'latin1'));
    else if (m[2] !== undefined) out.push(parseInt(m[2], 16));
    at = re.lastIndex;
  }
  if (at !== text.length) throw new Error(`cannot parse spec bytes at ${at}: ${text.slice(at, at + 10)}`);
  return Uint8Array.from(out);
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
