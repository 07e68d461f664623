// Kubernetes resource quantities ("40Gi", "10G", "1.5Ti", "500m", "1e3") as exact
// integers of milli-units, so that storage requests compare the way the apiserver and
// Harvester compare them (resource.Quantity.Cmp), without floating point.

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL_EXP: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** The quantity in milli-units, rounded up (as Quantity rounds to its smallest scale). */
export function parseQuantityMilli(text: string): bigint {
  const m = QUANTITY.exec(text.trim());
  if (!m) throw new Error(`quantities must match the regular expression of Kubernetes quantities: "${text}"`);
  const [, sign = '', number = '', suffix = ''] = m;
  const [whole = '', fraction = ''] = number.split('.');
  // value = digits / 10^fraction.length, kept as an exact fraction until the end.
  let numerator = BigInt((whole || '0') + fraction);
  let denominator = 10n ** BigInt(fraction.length);
  if (suffix in BINARY) {
    numerator *= BINARY[suffix] as bigint;
  } else {
    const exp =
      suffix.startsWith('e') || suffix.startsWith('E') ? Number(suffix.slice(1)) : (DECIMAL_EXP[suffix] ?? 0);
    if (exp >= 0) numerator *= 10n ** BigInt(exp);
    else denominator *= 10n ** BigInt(-exp);
  }
  numerator *= 1000n;
  const milli = (numerator + denominator - 1n) / denominator;
  return sign === '-' ? -milli : milli;
}

/** Whole units (bytes for storage), rounded up. */
export function parseQuantity(text: string): bigint {
  const milli = parseQuantityMilli(text);
  return milli >= 0n ? (milli + 999n) / 1000n : milli / 1000n;
}

export function compareQuantities(a: string, b: string): number {
  const d = parseQuantityMilli(a) - parseQuantityMilli(b);
  return d === 0n ? 0 : d > 0n ? 1 : -1;
}

/** Bytes in the canonical binary form the apiserver would print ("10Mi", "2Gi", "1536"). */
export function formatBinaryQuantity(bytes: bigint): string {
  for (const suffix of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki']) {
    const unit = BINARY[suffix] as bigint;
    if (bytes !== 0n && bytes % unit === 0n) return `${bytes / unit}${suffix}`;
  }
  return bytes.toString();
}
