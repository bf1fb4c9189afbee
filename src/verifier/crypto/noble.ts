/**
 * The browser's implementation of the crypto interface (`provider.ts`): @noble/hashes for
 * the hashes and @noble/curves' Ed25519 group for the signature check.
 *
 * noble's own `ed25519.verify` cannot be used: it checks the cofactored equation
 * `[8][S]B = [8]R + [8][k]A` and, by default, accepts non-canonical R (ZIP-215), so it
 * accepts signatures that OpenSSL — and so the reference — refuses. The check here is
 * OpenSSL's (`ossl_ed25519_verify`), step by step:
 *
 * 1. S, the signature's last 32 bytes read little-endian, must be below the group order L
 *    (a non-canonical S is refused);
 * 2. A is decoded the way OpenSSL decodes it: the top bit is the sign of x, y is the other
 *    255 bits and may be ≥ p (reduced), x = 0 with the sign bit set is accepted, and bytes
 *    that are no point are refused. Small-order keys are accepted;
 * 3. k = SHA-512(R ‖ A ‖ M) mod L, over the bytes of R and A exactly as given;
 * 4. R' = [S]B − [k]A is encoded canonically and must equal R byte for byte: no cofactor,
 *    and a non-canonical R can never match.
 */
import { ed25519 } from "@noble/curves/ed25519";
import { ripemd160, sha1 } from "@noble/hashes/legacy";
import { sha256, sha512 } from "@noble/hashes/sha2";
import { bytesToHex, concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import type { DigestAlgorithm, Ed25519Verifier, VerifierCrypto } from "./provider.js";

/** The order of the Ed25519 base point: 2^252 + 27742317777372353535851937790883648493. */
const GROUP_ORDER = 2n ** 252n + 27742317777372353535851937790883648493n;

const { Point } = ed25519;
type EdwardsPoint = ReturnType<typeof Point.fromBytes>;

function littleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

/** Step 2: OpenSSL's decoding of A, or null for bytes that are no point. */
function decodeKey(publicKey: Uint8Array): EdwardsPoint | null {
  try {
    // `true`: y up to 2^255 − 1 and x = 0 with the sign bit set are accepted, as by OpenSSL.
    return Point.fromBytes(publicKey, true);
  } catch {
    return null;
  }
}

/** Steps 1, 3 and 4, with A decoded from `publicKey`. */
function verifyWithKey(
  publicKey: Uint8Array,
  a: EdwardsPoint,
  message: Uint8Array,
  signature: Uint8Array,
): boolean {
  if (signature.length !== 64) return false;
  const r = signature.subarray(0, 32);
  const s = littleEndian(signature.subarray(32));
  if (s >= GROUP_ORDER) return false;
  const k = littleEndian(sha512(concatBytes(r, publicKey, message))) % GROUP_ORDER;
  const expectedR = Point.BASE.multiplyUnsafe(s).subtract(a.multiplyUnsafe(k));
  return sameBytes(expectedR.toBytes(), r);
}

const HASHES: Record<DigestAlgorithm, (data: Uint8Array) => Uint8Array> = {
  sha256,
  sha1,
  ripemd160,
};

export const nobleCrypto: VerifierCrypto = {
  id: "noble",
  name: "@noble/curves + @noble/hashes",
  digest: (algorithm, data) => HASHES[algorithm](data),
  sha256Hex: (data) => bytesToHex(sha256(typeof data === "string" ? utf8ToBytes(data) : data)),
  ed25519Verifier(publicKey: Uint8Array): Ed25519Verifier | null {
    if (publicKey.length !== 32) return null;
    const key = Uint8Array.from(publicKey);
    // Decoded once per key, with a small table of its multiples (window 4): [k]A then
    // costs a tenth of an unprepared multiplication, and the verifier is cached per did:key.
    const a = decodeKey(key)?.precompute(4) ?? null;
    return (message, signature) => a !== null && verifyWithKey(key, a, message, signature);
  },
};
