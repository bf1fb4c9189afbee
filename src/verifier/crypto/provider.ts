/**
 * The verifier's one door to cryptography: SHA-256 (digests, commitments), the hashes of
 * OpenTimestamps operations, and Ed25519 verification. Everything else in `src/verifier` is
 * plain TypeScript, so this interface is what a platform has to supply.
 *
 * Three implementations, which must accept and refuse exactly the same signatures
 * (`test/verifier/crypto/contract.test.ts` runs one contract against all three):
 * - `sodium.ts`: libsodium through sodium-native, the default on the server where it loads;
 *   about twice as fast as OpenSSL; the inputs libsodium refuses and OpenSSL 3.0 may accept
 *   get 3.0's answer from `sodium-edges.ts` (`test/verifier/crypto/differential.test.ts`).
 * - `node.ts`: OpenSSL through `node:crypto`, the server's fallback. OpenSSL is what the
 *   Python reference's `cryptography` uses, and it is about 11× faster than noble.
 * - `noble.ts`: @noble/curves and @noble/hashes, for the browser page. Its Ed25519 check is
 *   OpenSSL's equation, written out (see there), not noble's own `verify`.
 *
 * The default comes from `platform.ts`. The browser build (`scripts/build-web.mjs`) resolves
 * `platform.js` to `platform.browser.ts`, so the server never loads `noble.ts` and the page never
 * references `node:crypto` or sodium-native. `setVerifierCrypto` switches at run time (the contract test).
 */
import { platformCrypto } from "./platform.js";

/** The hash functions the verifier needs: SHA-256, and SHA-1 and RIPEMD-160 for OTS proofs. */
export type DigestAlgorithm = "sha256" | "sha1" | "ripemd160";

/**
 * Checks signatures by one public key, prepared once (the server keeps an OpenSSL key object
 * per did:key). `signature` is the 64 raw bytes.
 */
export type Ed25519Verifier = (message: Uint8Array, signature: Uint8Array) => boolean;

/** Which implementation: what `/info`, the metrics and the startup line name. */
export type VerifierCryptoId = "libsodium" | "openssl" | "noble";

export interface VerifierCrypto {
  readonly id: VerifierCryptoId;
  /** For logs and the page: `node:crypto (OpenSSL 3.0.19)`, `@noble/curves + @noble/hashes`. */
  readonly name: string;
  /**
   * The digest of `data`. Throws only when the platform lacks `algorithm` (RIPEMD-160 is
   * missing from some OpenSSL builds); OTS parsing reports that as `unsupported_op`.
   */
  digest(algorithm: DigestAlgorithm, data: Uint8Array): Uint8Array;
  /** Lowercase hex SHA-256 of `data` (a string is hashed as its UTF-8 bytes): the hot path. */
  sha256Hex(data: Uint8Array | string): string;
  /**
   * A verifier for the 32-byte Ed25519 public key `publicKey`, or null when the platform
   * refuses the bytes as a key. Neither implementation refuses any 32 bytes (OpenSSL
   * decodes the point only when it verifies), so a key that is not a point fails each
   * verification instead.
   */
  ed25519Verifier(publicKey: Uint8Array): Ed25519Verifier | null;
}

let active: VerifierCrypto = platformCrypto;
const listeners = new Set<() => void>();

/** The implementation in use. */
export function verifierCrypto(): VerifierCrypto {
  return active;
}

/**
 * Makes `crypto` the implementation every verifier function uses from now on, and returns
 * the one it replaces. Caches that hold objects of the old one (prepared keys) are emptied.
 */
export function setVerifierCrypto(crypto: VerifierCrypto): VerifierCrypto {
  const previous = active;
  active = crypto;
  if (previous !== crypto) for (const listener of listeners) listener();
  return previous;
}

/** For modules that cache what the implementation made: `onChange` runs after each switch. */
export function onVerifierCryptoChange(onChange: () => void): void {
  listeners.add(onChange);
}
