/**
 * The server's OpenSSL implementation of the crypto interface (`provider.ts`): `node:crypto`,
 * the same library under the Python reference's `cryptography`, so Ed25519 edge cases
 * (non-canonical S, small-order and non-canonical keys, non-canonical R) are decided as the
 * reference decides them.
 *
 * That holds for OpenSSL 3.0 (Node 20), whose answers the corpus pins. Later OpenSSL
 * releases (3.5 in Node 24 and in recent Node 22 releases) refuse small-order and non-canonical keys and small-order R that
 * 3.0 accepts when the equation holds. Under those, exactly these inputs (`edge-points.ts`) are
 * decided by `nobleCrypto`, which performs 3.0's check step by step; every other input is
 * OpenSSL's, so an upgrade of Node does not change a verdict. This provider is the fallback
 * where sodium-native does not load; the libsodium provider decides edge inputs itself, at
 * about the cost of an ordinary signature (`sodium-edges.ts`).
 */
import { createHash, createPublicKey, hash, verify } from "node:crypto";
import { isNonCanonicalEncoding, isSmallOrderEncoding } from "./edge-points.js";
import { nobleCrypto } from "./noble.js";
import type { DigestAlgorithm, Ed25519Verifier, VerifierCrypto } from "./provider.js";

/** DER SubjectPublicKeyInfo prefix of an Ed25519 key: the 32 raw bytes follow. */
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** Whether this process's OpenSSL decides Ed25519 edge cases as the reference's answers do. */
export const OPENSSL_DECIDES_EDGES = process.versions.openssl.startsWith("3.0.");

/** OpenSSL's own answer, whatever its version (the differential test compares with it). */
export function opensslVerifier(publicKey: Uint8Array): Ed25519Verifier | null {
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

/**
 * OpenSSL for ordinary inputs, OpenSSL 3.0's answer (from noble) for the edge points: the
 * verifier under OpenSSL releases after 3.0, exported so that it is tested on 3.0 as well.
 */
export function pinnedEdgesVerifier(publicKey: Uint8Array): Ed25519Verifier | null {
  if (
    publicKey.length === 32 &&
    (isNonCanonicalEncoding(publicKey) || isSmallOrderEncoding(publicKey))
  ) {
    return nobleCrypto.ed25519Verifier(publicKey);
  }
  const openssl = opensslVerifier(publicKey);
  if (openssl === null) return null;
  // Made on first need only: a small-order R is rare, and noble's key table costs a few ms.
  let edges: Ed25519Verifier | null | undefined;
  return (message, signature) => {
    if (openssl(message, signature)) return true;
    if (signature.length !== 64 || !isSmallOrderEncoding(signature)) return false;
    edges ??= nobleCrypto.ed25519Verifier(publicKey);
    return edges?.(message, signature) ?? false;
  };
}

export const nodeCrypto: VerifierCrypto = {
  id: "openssl",
  name: OPENSSL_DECIDES_EDGES
    ? `node:crypto (OpenSSL ${process.versions.openssl})`
    : `node:crypto (OpenSSL ${process.versions.openssl}; OpenSSL 3.0's check for small-order and non-canonical points)`,
  digest: (algorithm: DigestAlgorithm, data: Uint8Array) =>
    createHash(algorithm).update(data).digest(),
  sha256Hex: (data) => hash("sha256", data, "hex"),
  ed25519Verifier: OPENSSL_DECIDES_EDGES ? opensslVerifier : pinnedEdgesVerifier,
};
