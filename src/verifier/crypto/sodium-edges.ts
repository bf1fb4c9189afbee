/**
 * OpenSSL 3.0's Ed25519 answer for the inputs libsodium's `crypto_sign_verify_detached`
 * refuses before it computes (`edge-points.ts`): small-order and non-canonical keys, and a
 * small-order R. Computed with libsodium's group primitives, on every Node line, with no
 * per-key table: OpenSSL 3.0 itself is no longer in every Node (Node 24 ships 3.5, which
 * refuses these), and noble's step-by-step check cost about 1 ms a signature plus about
 * 7 ms a key.
 *
 * OpenSSL 3.0's check (`ossl_ed25519_verify`, which `noble.ts` writes out): S < L; A decoded
 * with y reduced mod p and x = 0 allowed with its sign bit; k = SHA-512(R ‖ A ‖ M) mod L over
 * the bytes as given; accept when [S]B − [k]A, encoded canonically, is R byte for byte.
 * The group is cyclic of order 8L, its points of small order are [i]G for the table's G, and:
 *
 * - **A of small order**, A = [a]G: [k]A = [k·a mod 8]G, so R' = [S]B − [k·a mod 8]G, one base
 *   multiplication and at most one subtraction.
 * - **R of small order**, R = [t]G (any key): for k ≠ 0 mod L, write A = [S·k⁻¹]B + D. Then
 *   R' = −[k]D, which is of small order exactly when D is; so R' = R exactly when D is some
 *   [d]G with k·d + t ≡ 0 (mod 8). One scalar inversion, one base multiplication and one
 *   subtraction, where a direct check would multiply A. A non-canonical R never matches.
 * - **A non-canonical (y ≥ p) and not of small order**, with any other R: a variable-base
 *   multiplication is unavoidable. libsodium multiplies only points of the prime-order
 *   subgroup, so A is split once per key into A₀ + [a]G (A₀ = [8⁻¹]([8]A)), and
 *   R' = [S]B − [k]A₀ − [k·a mod 8]G. Only 20 such keys decode (y − p ∈ {3, 4, 5, 6, 9, 10,
 *   14, 15, 16, 18}, either sign); the other 14 encodings are no point and always refuse.
 *
 * `test/verifier/crypto/differential.test.ts` compares this with OpenSSL 3.0 itself on
 * Node 20 and 22 and with noble's emulation on Node 24; `sodium-edges.test.ts` checks each
 * class above.
 */
import { createHash } from "node:crypto";
import { isNonCanonicalEncoding, SMALL_ORDER_CANONICAL, smallOrderPoint } from "./edge-points.js";
import type { Ed25519Verifier } from "./provider.js";

type Sodium = typeof import("sodium-native");

/** L = 2^252 + 27742317777372353535851937790883648493, little-endian. */
const GROUP_ORDER = Buffer.from(
  "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010",
  "hex",
);
const IDENTITY = SMALL_ORDER_CANONICAL[0]!;

/** S < L, the 32 bytes read little-endian: OpenSSL 3.0 refuses any other S. */
function isCanonicalScalar(s: Uint8Array): boolean {
  for (let i = 31; i >= 0; i--) {
    if (s[i]! !== GROUP_ORDER[i]!) return s[i]! < GROUP_ORDER[i]!;
  }
  return false;
}

function isZero(bytes: Uint8Array): boolean {
  let any = 0;
  for (const byte of bytes) any |= byte;
  return any === 0;
}

/** k = SHA-512(R ‖ A ‖ M) mod L, over the bytes as given. */
function challenge(sodium: Sodium, r: Uint8Array, key: Uint8Array, message: Uint8Array): Buffer {
  const k = Buffer.alloc(32);
  sodium.crypto_core_ed25519_scalar_reduce(
    k,
    createHash("sha512").update(r).update(key).update(message).digest(),
  );
  return k;
}

/**
 * a·b mod L for scalars below 2^256: the 512-bit product in 16-bit limbs (each column sum
 * stays below 2^41, exact in a double), reduced by libsodium. sodium-native 5.1.0 exposes no
 * scalar multiplication, and BigInt conversions cost several times this.
 */
export function multiplyScalars(sodium: Sodium, a: Uint8Array, b: Uint8Array): Buffer {
  const columns = new Float64Array(32);
  for (let i = 0; i < 16; i++) {
    const ai = a[2 * i]! | (a[2 * i + 1]! << 8);
    if (ai === 0) continue;
    for (let j = 0; j < 16; j++) columns[i + j]! += ai * (b[2 * j]! | (b[2 * j + 1]! << 8));
  }
  const product = Buffer.alloc(64);
  let carry = 0;
  for (let i = 0; i < 32; i++) {
    const column = columns[i]! + carry;
    const limb = column % 65536;
    product[2 * i] = limb & 0xff;
    product[2 * i + 1] = limb >>> 8;
    carry = Math.floor(column / 65536);
  }
  const reduced = Buffer.alloc(32);
  sodium.crypto_core_ed25519_scalar_reduce(reduced, product);
  return reduced;
}

/** [s]B for 0 ≤ s < L: libsodium refuses s = 0, whose multiple is the identity. */
function baseMultiple(sodium: Sodium, s: Uint8Array): Buffer {
  if (isZero(s)) return Buffer.from(IDENTITY);
  const out = Buffer.alloc(32);
  sodium.crypto_scalarmult_ed25519_base_noclamp(out, s);
  return out;
}

/** p − q, canonically encoded, or null when either is no point (libsodium throws then). */
function difference(sodium: Sodium, p: Uint8Array, q: Uint8Array): Buffer | null {
  const out = Buffer.alloc(32);
  try {
    sodium.crypto_core_ed25519_sub(out, p, q);
  } catch {
    return null;
  }
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * OpenSSL 3.0's answer for a signature whose R is one of the small-order encodings, under any
 * 32-byte key: the R case of the module comment.
 */
export function verifySmallOrderR(
  sodium: Sodium,
  key: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): boolean {
  const r = signature.subarray(0, 32);
  const s = signature.subarray(32, 64);
  const rPoint = smallOrderPoint(r);
  // R' is encoded canonically, so a non-canonical R never equals it.
  if (rPoint === null || !rPoint.canonical || !isCanonicalScalar(s)) return false;
  return smallOrderRHolds(sodium, key, s, challenge(sodium, r, key, message), rPoint.index);
}

/**
 * Whether [s]B − [k]A = [t]G for any 32-byte A (false when A is no point), with s < L and
 * k < L given: the arithmetic of `verifySmallOrderR`, apart so that tests can give it k = 0.
 */
export function smallOrderRHolds(
  sodium: Sodium,
  key: Uint8Array,
  s: Uint8Array,
  k: Uint8Array,
  t: number,
): boolean {
  if (isZero(k)) {
    // R' = [S]B, of small order only as the identity, for S = 0. OpenSSL still decodes A.
    return isZero(s) && t === 0 && difference(sodium, key, IDENTITY) !== null;
  }
  // [S·k⁻¹]B; for S = 0 (what an attacker sends, it costs nothing to forge) the identity,
  // without the inversion, which is half of this function's cost.
  let quotient: Uint8Array = IDENTITY;
  if (!isZero(s)) {
    const kInverse = Buffer.alloc(32);
    sodium.crypto_core_ed25519_scalar_invert(kInverse, k);
    quotient = baseMultiple(sodium, multiplyScalars(sodium, s, kInverse));
  }
  const d = difference(sodium, key, quotient);
  if (d === null) return false;
  const dPoint = smallOrderPoint(d);
  return dPoint !== null && ((k[0]! & 7) * dPoint.index + t) % 8 === 0;
}

/**
 * R' = [S]B − [k]A for an edge key split as A₀ + [a]G (A₀ null for a key of small order),
 * canonically encoded, for s < L and k < L.
 */
export function expectedR(sodium: Sodium, split: KeySplit, s: Uint8Array, k: Uint8Array): Buffer {
  let expected = baseMultiple(sodium, s);
  if (split.primeOrderPart !== null && !isZero(k)) {
    const multiple = Buffer.alloc(32);
    sodium.crypto_scalarmult_ed25519_noclamp(multiple, k, split.primeOrderPart);
    expected = difference(sodium, expected, multiple)!;
  }
  const m = ((k[0]! & 7) * split.torsionIndex) % 8;
  return m === 0 ? expected : difference(sodium, expected, SMALL_ORDER_CANONICAL[m]!)!;
}

/** An edge key A = A₀ + [a]G: A₀ in the prime-order subgroup (null when it is the identity). */
export interface KeySplit {
  readonly primeOrderPart: Buffer | null;
  readonly torsionIndex: number;
}

/**
 * The split of a key of small order (from the table) or with y ≥ p (computed: [8]A by three
 * doublings, A₀ = [8⁻¹ mod L]([8]A)); null when the bytes are no point or not an edge key.
 */
export function splitEdgeKey(sodium: Sodium, key: Uint8Array): KeySplit | null {
  const small = smallOrderPoint(key);
  if (small !== null) return { primeOrderPart: null, torsionIndex: small.index };
  return isNonCanonicalEncoding(key) ? splitKey(sodium, key) : null;
}

function splitKey(sodium: Sodium, key: Uint8Array): KeySplit | null {
  const point = difference(sodium, key, IDENTITY);
  if (point === null) return null;
  let multiple = point;
  const doubled = Buffer.alloc(32);
  for (let i = 0; i < 3; i++) {
    sodium.crypto_core_ed25519_add(doubled, multiple, multiple);
    multiple = Buffer.from(doubled);
  }
  const eight = Buffer.alloc(32);
  eight[0] = 8;
  const eighth = Buffer.alloc(32);
  sodium.crypto_core_ed25519_scalar_invert(eighth, eight);
  const primeOrderPart = Buffer.alloc(32);
  sodium.crypto_scalarmult_ed25519_noclamp(primeOrderPart, eighth, multiple);
  const torsion = smallOrderPoint(difference(sodium, point, primeOrderPart)!);
  if (torsion === null) throw new Error("A − [8⁻¹]([8]A) is not of small order");
  return { primeOrderPart, torsionIndex: torsion.index };
}

/**
 * OpenSSL 3.0's verifier for a key libsodium refuses: one of small order or with y ≥ p. Null
 * for any other key (the caller verifies those with libsodium, and small-order R with
 * `verifySmallOrderR`).
 */
export function edgeKeyVerifier(sodium: Sodium, publicKey: Uint8Array): Ed25519Verifier | null {
  if (publicKey.length !== 32) return null;
  const key = Uint8Array.from(publicKey);
  const small = smallOrderPoint(key);
  if (small === null && !isNonCanonicalEncoding(key)) return null;
  // Split on first need (a y ≥ p key costs a multiplication to split); each did:key's
  // verifier is cached, and only 20 such keys decode.
  let split: KeySplit | null | undefined =
    small === null ? undefined : { primeOrderPart: null, torsionIndex: small.index };
  return (message, signature) => {
    if (signature.length !== 64) return false;
    split ??= splitKey(sodium, key);
    if (split === null) return false;
    const r = signature.subarray(0, 32);
    const s = signature.subarray(32, 64);
    if (split.primeOrderPart !== null && smallOrderPoint(r) !== null) {
      // Cheaper than the multiplication below, for the same answer.
      return verifySmallOrderR(sodium, key, message, signature);
    }
    if (!isCanonicalScalar(s)) return false;
    // A key of small order whose multiples are all the identity needs no hash.
    const k =
      split.primeOrderPart === null && split.torsionIndex === 0
        ? Buffer.alloc(32)
        : challenge(sodium, r, key, message);
    return sameBytes(expectedR(sodium, split, s, k), r);
  };
}
