/**
 * The crypto implementation a platform starts with. On the server: libsodium where
 * sodium-native loads and answers as OpenSSL does (`sodium.ts`), else OpenSSL through
 * `node:crypto`, and `platformCryptoProblem` says why. The browser build resolves this module
 * to `platform.browser.ts` instead, so the page never references sodium-native.
 */
import { nodeCrypto } from "./node.js";
import { loadSodiumCrypto } from "./sodium.js";

const sodium = loadSodiumCrypto();
const library = sodium.sodium;

export const platformCrypto = sodium.crypto ?? nodeCrypto;

/** Why this process verifies with OpenSSL instead of libsodium, or null when it does not. */
export const platformCryptoProblem: string | null = sodium.problem;

/**
 * Ed25519 signing by libsodium: the 64-byte signature of `message` under the libsodium secret
 * key (seed ‖ public key). Null where sodium-native is not in use; then `node:crypto` signs.
 * Ed25519 signatures are deterministic, so both give the same bytes.
 */
export const platformEd25519Sign: ((message: Uint8Array, secretKey: Uint8Array) => Buffer) | null =
  library === null
    ? null
    : (message, secretKey) => {
        const signature = Buffer.allocUnsafe(64);
        library.crypto_sign_detached(signature, message, secretKey);
        return signature;
      };
