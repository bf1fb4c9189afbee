/**
 * Ed25519's numbers for the crypto tests: the field prime, the group order, and scalars and
 * field elements as the 32 little-endian bytes Ed25519 encodes them in.
 */

/** The field prime, 2^255 − 19. */
export const P = 2n ** 255n - 19n;
/** The order of the base point, 2^252 + 27742317777372353535851937790883648493. */
export const L = 2n ** 252n + 27742317777372353535851937790883648493n;

/** `value` (below 2^256) as 32 little-endian bytes. */
export function le32(value: bigint): Buffer {
  const out = Buffer.alloc(32);
  let rest = value;
  for (let i = 0; i < 32; i++) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}

/** Little-endian bytes as a number. */
export function leToBigint(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}
