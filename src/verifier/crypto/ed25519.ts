/**
 * Ed25519 for receipts, statements and attestations.
 *
 * Verification goes through the crypto interface (`provider.ts`): OpenSSL on the server,
 * like the reference's `cryptography`, so edge-case acceptance matches, and the same
 * equation in the browser. A bounded cache keeps one prepared key per did:key: importing a
 * key costs about as much as a verification, and bundles reuse a handful of issuers.
 *
 * Signing (producers, the service's receipts) is the server's alone: libsodium where it is in
 * use (about twice as fast), else `node:crypto`. Ed25519 signatures are deterministic, so the
 * two give the same bytes (test/verifier/crypto/signing.test.ts).
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign as nodeSign,
} from "node:crypto";
import type { JsonObject, JsonValue } from "../json/value.js";
import { Base64Error, b64uEncode, pyB64uDecode } from "./base64.js";
import { DidKeyError, didKeyToPublicKey, publicKeyToDidKey } from "./did-key.js";
import { platformEd25519Sign } from "./platform.js";
import { type Ed25519Verifier, onVerifierCryptoChange, verifierCrypto } from "./provider.js";

const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const KEY_CACHE_LIMIT = 4096;
const keyCache = new Map<string, Ed25519Verifier | null>();
onVerifierCryptoChange(() => keyCache.clear());

function verifierFor(did: string): Ed25519Verifier | null {
  const cached = keyCache.get(did);
  if (cached !== undefined) return cached;
  let verifier: Ed25519Verifier | null;
  try {
    verifier = verifierCrypto().ed25519Verifier(didKeyToPublicKey(did));
  } catch (error) {
    if (!(error instanceof DidKeyError) && !(error instanceof Error)) throw error;
    verifier = null;
  }
  if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.delete(keyCache.keys().next().value!);
  keyCache.set(did, verifier);
  return verifier;
}

/** Whether `did` names a usable Ed25519 public key. */
export function canDecodeDidKey(did: string): boolean {
  return verifierFor(did) !== null;
}

/**
 * The reference's `keys.verify(did, message, sig_b64u)`: false for a bad did, bad base64,
 * a bad key or a signature that does not verify.
 */
export function verifyEd25519(did: string, message: Uint8Array, signatureB64u: string): boolean {
  const verifier = verifierFor(did);
  if (verifier === null) return false;
  let signature: Buffer;
  try {
    signature = pyB64uDecode(signatureB64u);
  } catch (error) {
    if (error instanceof Base64Error) return false;
    throw error;
  }
  if (signature.length !== 64) return false;
  return verifier(message, signature);
}

/** An Ed25519 signing identity: the private key and its did:key. */
export interface Ed25519Signer {
  readonly did: string;
  readonly privateKey: KeyObject;
  /** The 64-byte signature of `message`: by libsodium where it is in use, else by OpenSSL. */
  readonly sign: (message: Uint8Array) => Buffer;
}

export function generateSigner(): Ed25519Signer {
  const { privateKey } = generateKeyPairSync("ed25519");
  return signerFromPrivateKey(privateKey);
}

/** A signer from a 32-byte Ed25519 seed (deterministic keys for tests and fixtures). */
export function signerFromSeed(seed: Uint8Array): Ed25519Signer {
  if (seed.length !== 32) throw new RangeError("Ed25519 seeds are 32 bytes");
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, seed]),
    format: "der",
    type: "pkcs8",
  });
  return signerFromPrivateKey(privateKey);
}

export function signerFromPrivateKey(privateKey: KeyObject): Ed25519Signer {
  const publicKey = createPublicKey(privateKey)
    .export({ format: "der", type: "spki" })
    .subarray(SPKI_PREFIX.length);
  return {
    did: publicKeyToDidKey(publicKey),
    privateKey,
    sign: signingFunction(privateKey, publicKey),
  };
}

/**
 * libsodium signs with its secret key, the seed followed by the public key; the seed is the
 * last 32 bytes of the PKCS #8 form. Kept in the closure only, as the KeyObject keeps it.
 */
function signingFunction(
  privateKey: KeyObject,
  publicKey: Buffer,
): (message: Uint8Array) => Buffer {
  const sodiumSign = platformEd25519Sign;
  if (sodiumSign === null) return (message) => nodeSign(null, message, privateKey);
  const pkcs8 = privateKey.export({ format: "der", type: "pkcs8" });
  if (pkcs8.length !== PKCS8_PREFIX.length + 32)
    return (message) => nodeSign(null, message, privateKey);
  const secretKey = Buffer.concat([pkcs8.subarray(PKCS8_PREFIX.length), publicKey]);
  pkcs8.fill(0);
  return (message) => sodiumSign(message, secretKey);
}

/** base64url (unpadded) Ed25519 signature over `message`. */
export function signEd25519(signer: Ed25519Signer, message: Uint8Array): string {
  return b64uEncode(signer.sign(message));
}

/** `{alg: "ed25519", key, value}`: the signature member of receipts, statements and attestations. */
export function ed25519Signature(signer: Ed25519Signer, message: Uint8Array): JsonObject {
  return new Map<string, JsonValue>([
    ["alg", "ed25519"],
    ["key", signer.did],
    ["value", signEd25519(signer, message)],
  ]);
}
