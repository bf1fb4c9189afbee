/**
 * The Ed25519 encodings on which implementations part ways (libsodium, OpenSSL 3.0 and later
 * OpenSSL releases): points of small order and non-canonical encodings (y ≥ p). Providers
 * route exactly these to the implementation whose answer is the reference's (`node.ts`,
 * `sodium-edges.ts`), and decide them in O(1) from the table below.
 *
 * The 8 points of small order form a cyclic group: each is [i]G for one i in 0..7, G a fixed
 * point of order 8. Knowing i for a key or an R is what lets `sodium-edges.ts` do their
 * arithmetic by index (k·A for a small-order A is [k·i mod 8]G) instead of on the curve.
 */

/**
 * One y coordinate (little-endian, bit 255 cleared) of a small-order point as libsodium lists
 * them in `ge25519_has_small_order`: 0 (order 4), 1 (the identity), the two of order 8,
 * p − 1 (order 2), and p and p + 1, the non-canonical encodings of 0 and 1. For each sign bit
 * (clear, set): the index i of the point [i]G OpenSSL decodes it to, and whether the encoding
 * is the canonical one (what OpenSSL and libsodium encode that point as; never y ≥ p, never
 * the sign bit on x = 0).
 */
interface SmallOrderY {
  readonly y: Uint8Array;
  readonly index: readonly [number, number];
  readonly canonical: readonly [boolean, boolean];
}

const SMALL_ORDER_Y: readonly SmallOrderY[] = (
  [
    ["0000000000000000000000000000000000000000000000000000000000000000", [6, 2], [true, true]],
    ["0100000000000000000000000000000000000000000000000000000000000000", [0, 0], [true, false]],
    ["26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", [3, 5], [true, true]],
    ["c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", [1, 7], [true, true]],
    ["ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", [4, 4], [true, false]],
    ["edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", [6, 2], [false, false]],
    ["eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", [0, 0], [false, false]],
  ] as const
).map(([hex, index, canonical]) => ({
  y: Uint8Array.from(Buffer.from(hex, "hex")),
  index,
  canonical,
}));

/** What a small-order encoding decodes to: [index]G, and whether the bytes are canonical. */
export interface SmallOrderPoint {
  readonly index: number;
  readonly canonical: boolean;
}

const SMALL_ORDER_POINTS: readonly (readonly [SmallOrderPoint, SmallOrderPoint])[] =
  SMALL_ORDER_Y.map(({ index, canonical }) => [
    { index: index[0], canonical: canonical[0] },
    { index: index[1], canonical: canonical[1] },
  ]);

/**
 * The point of small order the 32 bytes at `bytes[0..32)` encode, or null when they are not
 * one of libsodium's 14 small-order encodings. O(1): one byte rules out almost every input.
 */
export function smallOrderPoint(bytes: Uint8Array): SmallOrderPoint | null {
  const first = bytes[0]!;
  // The seven encodings start with seven values.
  if (first > 0x01 && first !== 0x26 && first !== 0xc7 && (first < 0xec || first > 0xee)) {
    return null;
  }
  next: for (let entry = 0; entry < SMALL_ORDER_Y.length; entry++) {
    const { y } = SMALL_ORDER_Y[entry]!;
    for (let i = 0; i < 31; i++) if (bytes[i] !== y[i]) continue next;
    if ((bytes[31]! & 0x7f) === y[31]) return SMALL_ORDER_POINTS[entry]![bytes[31]! >> 7]!;
  }
  return null;
}

/** Whether the 32 bytes at `bytes[0..32)` encode a small-order point libsodium refuses. */
export function isSmallOrderEncoding(bytes: Uint8Array): boolean {
  return smallOrderPoint(bytes) !== null;
}

/** The canonical encoding of [i]G for i in 0..7, indexed by i. */
export const SMALL_ORDER_CANONICAL: readonly Uint8Array[] = Array.from({ length: 8 }, (_, i) => {
  for (const { y, index, canonical } of SMALL_ORDER_Y) {
    for (const sign of [0, 1] as const) {
      if (index[sign] !== i || !canonical[sign]) continue;
      const bytes = Uint8Array.from(y);
      bytes[31]! |= sign << 7;
      return bytes;
    }
  }
  throw new Error(`no canonical encoding of [${i}]G in the table`);
});

/** Whether y ≥ p = 2^255 − 19: the encodings libsodium refuses as a key (`ge25519_is_canonical`). */
export function isNonCanonicalEncoding(bytes: Uint8Array): boolean {
  if ((bytes[31]! & 0x7f) !== 0x7f || bytes[0]! < 0xed) return false;
  for (let i = 1; i < 31; i++) if (bytes[i] !== 0xff) return false;
  return true;
}
