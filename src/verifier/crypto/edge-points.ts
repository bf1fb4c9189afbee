/**
 * The Ed25519 encodings on which implementations part ways (libsodium, OpenSSL 3.0 and later
 * OpenSSL releases): points of small order and non-canonical encodings (y ≥ p). Providers
 * route exactly these to the implementation whose answer is the reference's (`node.ts`).
 */
/**
 * The y coordinates (little-endian, bit 255 cleared) of the points of small order as
 * libsodium lists them in `ge25519_has_small_order`: 0 (order 4), 1 (the identity), the two
 * of order 8, p − 1 (order 2), and p and p + 1, the non-canonical encodings of 0 and 1.
 * With either sign bit.
 */
const SMALL_ORDER_Y: readonly Uint8Array[] = [
  "0000000000000000000000000000000000000000000000000000000000000000",
  "0100000000000000000000000000000000000000000000000000000000000000",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
].map((hex) => Uint8Array.from(Buffer.from(hex, "hex")));

/** Whether the 32 bytes at `bytes[0..32)` encode a small-order point libsodium refuses. */
export function isSmallOrderEncoding(bytes: Uint8Array): boolean {
  const first = bytes[0]!;
  // One byte rules out almost every input: the seven encodings start with seven values.
  if (first > 0x01 && first !== 0x26 && first !== 0xc7 && (first < 0xec || first > 0xee)) {
    return false;
  }
  next: for (const y of SMALL_ORDER_Y) {
    for (let i = 0; i < 31; i++) if (bytes[i] !== y[i]) continue next;
    if ((bytes[31]! & 0x7f) === y[31]) return true;
  }
  return false;
}

/** Whether y ≥ p = 2^255 − 19: the encodings libsodium refuses as a key (`ge25519_is_canonical`). */
export function isNonCanonicalEncoding(bytes: Uint8Array): boolean {
  if ((bytes[31]! & 0x7f) !== 0x7f || bytes[0]! < 0xed) return false;
  for (let i = 1; i < 31; i++) if (bytes[i] !== 0xff) return false;
  return true;
}
