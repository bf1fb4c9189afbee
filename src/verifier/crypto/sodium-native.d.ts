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
}
