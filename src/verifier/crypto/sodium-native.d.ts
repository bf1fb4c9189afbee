/**
 * The part of sodium-native 5.x that receiptd uses. The package ships no types, and
 * @types/sodium-native describes version 2. Every function throws on a buffer of the wrong
 * length (sodium-native's own asserts), so callers check lengths first.
 */
declare module "sodium-native" {
  export const crypto_sign_BYTES: number;
  export const crypto_sign_PUBLICKEYBYTES: number;
  export const crypto_sign_SECRETKEYBYTES: number;
  export const crypto_sign_SEEDBYTES: number;
  /** True when `signature` (64 bytes) is `message`'s signature under `publicKey` (32 bytes). */
  export function crypto_sign_verify_detached(
    signature: ArrayBufferView,
    message: ArrayBufferView,
    publicKey: ArrayBufferView,
  ): boolean;
  /** Writes the 64-byte signature of `message` by `secretKey` (seed ‖ public key) to `signature`. */
  export function crypto_sign_detached(
    signature: ArrayBufferView,
    message: ArrayBufferView,
    secretKey: ArrayBufferView,
  ): void;
  /** The key pair of a 32-byte seed: `publicKey` 32 bytes, `secretKey` 64 (seed ‖ public key). */
  export function crypto_sign_seed_keypair(
    publicKey: ArrayBufferView,
    secretKey: ArrayBufferView,
    seed: ArrayBufferView,
  ): void;
  /**
   * [n]B for a 32-byte scalar n (not clamped; bit 255 ignored). Throws for n = 0 and any other
   * n whose result is the identity.
   */
  export function crypto_scalarmult_ed25519_base_noclamp(
    q: ArrayBufferView,
    n: ArrayBufferView,
  ): void;
  /**
   * [n]P (not clamped). Throws unless P is canonical, not of small order, and in the
   * prime-order subgroup, and for a result that is the identity.
   */
  export function crypto_scalarmult_ed25519_noclamp(
    q: ArrayBufferView,
    n: ArrayBufferView,
    p: ArrayBufferView,
  ): void;
  /** r = p + q for any two points (y ≥ p reduced); throws when either is no point. */
  export function crypto_core_ed25519_add(
    r: ArrayBufferView,
    p: ArrayBufferView,
    q: ArrayBufferView,
  ): void;
  /** r = p − q for any two points (y ≥ p reduced); throws when either is no point. */
  export function crypto_core_ed25519_sub(
    r: ArrayBufferView,
    p: ArrayBufferView,
    q: ArrayBufferView,
  ): void;
  /** The 32-byte scalar s⁻¹ mod L (0 for s ≡ 0). */
  export function crypto_core_ed25519_scalar_invert(
    recip: ArrayBufferView,
    s: ArrayBufferView,
  ): void;
  /** The 64-byte little-endian number s reduced mod L, as 32 bytes. */
  export function crypto_core_ed25519_scalar_reduce(r: ArrayBufferView, s: ArrayBufferView): void;
}
