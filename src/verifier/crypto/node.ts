/**
 * The server's implementation of the crypto interface (`provider.ts`): OpenSSL through
 * `node:crypto`, the same library under the Python reference's `cryptography`, so Ed25519
 * edge cases (non-canonical S, small-order and non-canonical keys, non-canonical R) are
 * decided as the reference decides them.
 */
import { createHash, createPublicKey, hash, verify } from "node:crypto";
import type { DigestAlgorithm, Ed25519Verifier, VerifierCrypto } from "./provider.js";

/** DER SubjectPublicKeyInfo prefix of an Ed25519 key: the 32 raw bytes follow. */
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

function ed25519Verifier(publicKey: Uint8Array): Ed25519Verifier | null {
  let key: ReturnType<typeof createPublicKey>;
  try {
    key = createPublicKey({
      key: Buffer.concat([SPKI_PREFIX, publicKey]),
      format: "der",
      type: "spki",
    });
  } catch {
    return null;
  }
  return (message, signature) => {
    try {
      return verify(null, message, key, signature);
    } catch {
      return false;
    }
  };
}

export const nodeCrypto: VerifierCrypto = {
  id: "openssl",
  name: `node:crypto (OpenSSL ${process.versions.openssl})`,
  digest: (algorithm: DigestAlgorithm, data: Uint8Array) =>
    createHash(algorithm).update(data).digest(),
  sha256Hex: (data) => hash("sha256", data, "hex"),
  ed25519Verifier,
};
