/**
 * The server's fast implementation of the crypto interface (`provider.ts`): Ed25519 through
 * libsodium (sodium-native), about twice as fast as OpenSSL 3.0's, with OpenSSL 3.0's answer
 * on every input, on every Node line. Hashes stay on `node:crypto` (OpenSSL's SHA-256 is the
 * faster of the two).
 *
 * libsodium's `crypto_sign_verify_detached` computes OpenSSL's equation (R' = [S]B − [k]A,
 * k = SHA-512(R ‖ A ‖ M) mod L over the bytes as given, R' encoded canonically and compared
 * with R byte for byte, S ≥ L refused) but refuses more before it: a key whose y is ≥ p, a
 * key or an R whose encoding is one of the small-order points. Those inputs, and only those,
 * are decided by `sodium-edges.ts`, which computes OpenSSL 3.0's answer for them from
 * libsodium's group operations; for every other input both libraries decide the same
 * equation, so libsodium's yes and its no both stand. docs/verifier-decisions.md gives the
 * argument, test/verifier/crypto/differential.test.ts checks it on 100,000 inputs.
 *
 * Later libsodium releases accept R − R' of small order (a cofactored tolerance OpenSSL does
 * not have), which would accept signatures OpenSSL refuses. `loadSodiumCrypto` therefore asks
 * the loaded library three known answers first, and a library that gives another answer is
 * not used.
 */
import { createRequire } from "node:module";
import { isSmallOrderEncoding } from "./edge-points.js";
import { nodeCrypto } from "./node.js";
import type { Ed25519Verifier, VerifierCrypto } from "./provider.js";
import { edgeKeyVerifier, verifySmallOrderR } from "./sodium-edges.js";

type Sodium = typeof import("sodium-native");

function sodiumVerifier(sodium: Sodium, publicKey: Uint8Array): Ed25519Verifier | null {
  // OpenSSL refuses any key that is not 32 bytes, as the interface asks.
  if (publicKey.length !== 32) return nodeCrypto.ed25519Verifier(publicKey);
  const edgeKey = edgeKeyVerifier(sodium, publicKey);
  if (edgeKey !== null) return edgeKey;
  // A copy: the caller's bytes may be a view into a buffer that is reused.
  const key = Buffer.from(publicKey);
  return (message, signature) => {
    if (signature.length !== 64) return false;
    if (sodium.crypto_sign_verify_detached(signature, message, key)) return true;
    // A small-order R is the one refusal of libsodium's that OpenSSL 3.0 may not share.
    if (!isSmallOrderEncoding(signature)) return false;
    return verifySmallOrderR(sodium, key, message, signature);
  };
}

/** What the package is called in names and messages. */
const PACKAGE = "sodium-native";

function sodiumCrypto(sodium: Sodium, version: string): VerifierCrypto {
  return {
    id: "libsodium",
    name: `libsodium (${PACKAGE} ${version}), OpenSSL 3.0's answers for small-order and non-canonical points`,
    digest: nodeCrypto.digest,
    sha256Hex: nodeCrypto.sha256Hex,
    ed25519Verifier: (publicKey) => sodiumVerifier(sodium, publicKey),
  };
}

/**
 * Inputs on which the libsodium variants differ, with OpenSSL's answers: a mixed-order key
 * (a·B plus a point of order 8) with an honest signature whose challenge 8 does not divide, an
 * R of mixed order with an honest S, and an ordinary signature.
 */
const KNOWN_ANSWERS: readonly {
  key: string;
  message: string;
  signature: string;
  valid: boolean;
}[] = [
  {
    key: "3b526276858f277df461e2b6114f330919b097c3f3af6432316fc167bf5ecc5d",
    message: "mixed key 0",
    signature:
      "f34dc744d295ce626e66d283cf6bfb23557cd29ad8649033d6be416a3930ee76b0221a6f68fdae4be435df05fd61a5b0a636231459267169d4de17cdd8893101",
    valid: false,
  },
  {
    key: "edfeba618e2b17ed3f3a93a8b02cefd7628099213bfe3c82288e1891110fb510",
    message: "mixed R 0",
    signature:
      "8b2dde4655a513b8f2aedb4c41f5bdd8abe936fcf1468d45a5106c88045fb01b5b77ad76fa9809aa4a3d366b59c359f4095ee2aa3f3fb5750c87b0a718293401",
    valid: false,
  },
  {
    key: "edfeba618e2b17ed3f3a93a8b02cefd7628099213bfe3c82288e1891110fb510",
    message: "plain",
    signature:
      "f34dc744d295ce626e66d283cf6bfb23557cd29ad8649033d6be416a3930ee763e606c0c39751b8078a829837712a09d28af817a6911ec2ea5a19e6db3dc130c",
    valid: true,
  },
];

export type SodiumLoad =
  | { readonly crypto: VerifierCrypto; readonly sodium: Sodium; readonly problem: null }
  | { readonly crypto: null; readonly sodium: null; readonly problem: string };

const require = createRequire(import.meta.url);

function requireSodium(): { sodium: Sodium; version: string } {
  const sodium = require(PACKAGE) as Sodium;
  const { version } = require(`${PACKAGE}/package.json`) as { version: string };
  return { sodium, version };
}

/**
 * Loads sodium-native and checks it decides as OpenSSL does; `problem` says why not when it
 * cannot be used (no binary for this platform, a library that answers otherwise). `load` is
 * for tests, which make it fail.
 */
export function loadSodiumCrypto(
  load: () => { sodium: Sodium; version: string } = requireSodium,
): SodiumLoad {
  let loaded: { sodium: Sodium; version: string };
  try {
    loaded = load();
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return { crypto: null, sodium: null, problem: `${PACKAGE} did not load: ${reason}` };
  }
  const { sodium, version } = loaded;
  for (const known of KNOWN_ANSWERS) {
    const answer = sodium.crypto_sign_verify_detached(
      Buffer.from(known.signature, "hex"),
      Buffer.from(known.message, "utf8"),
      Buffer.from(known.key, "hex"),
    );
    if (answer !== known.valid) {
      return {
        crypto: null,
        sodium: null,
        problem: `${PACKAGE} ${version} ${known.valid ? "refuses" : "accepts"} the signature '${known.message}' that OpenSSL ${known.valid ? "accepts" : "refuses"}`,
      };
    }
  }
  return { crypto: sodiumCrypto(sodium, version), sodium, problem: null };
}
