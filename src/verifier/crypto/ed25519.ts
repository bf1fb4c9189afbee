/**
 * Ed25519 through node:crypto (OpenSSL, like the reference's `cryptography`, so edge-case
 * acceptance matches), with a bounded cache of public KeyObjects per did:key: importing a
 * key costs about as much as a verification, and bundles reuse a handful of issuers.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign as nodeSign,
  verify as nodeVerify,
} from "node:crypto";
import type { JsonObject, JsonValue } from "../json/value.js";
import { Base64Error, b64uEncode, pyB64uDecode } from "./base64.js";
import { DidKeyError, didKeyToPublicKey, publicKeyToDidKey } from "./did-key.js";

const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const KEY_CACHE_LIMIT = 4096;
const keyCache = new Map<string, KeyObject | null>();

function publicKeyObject(did: string): KeyObject | null {
  const cached = keyCache.get(did);
  if (cached !== undefined) return cached;
  let key: KeyObject | null;
  try {
    const raw = didKeyToPublicKey(did);
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
  } catch (error) {
    if (!(error instanceof DidKeyError) && !(error instanceof Error)) throw error;
    key = null;
  }
  if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.delete(keyCache.keys().next().value!);
  keyCache.set(did, key);
  return key;
}

/** Whether `did` names a usable Ed25519 public key. */
export function canDecodeDidKey(did: string): boolean {
  return publicKeyObject(did) !== null;
}

/**
 * The reference's `keys.verify(did, message, sig_b64u)`: false for a bad did, bad base64,
 * a bad key or a signature that does not verify.
 */
export function verifyEd25519(did: string, message: Uint8Array, signatureB64u: string): boolean {
  const key = publicKeyObject(did);
  if (key === null) return false;
  let signature: Buffer;
  try {
    signature = pyB64uDecode(signatureB64u);
  } catch (error) {
    if (error instanceof Base64Error) return false;
    throw error;
  }
  if (signature.length !== 64) return false;
  try {
    return nodeVerify(null, message, key, signature);
  } catch {
    return false;
  }
}

/** An Ed25519 signing identity: the private key and its did:key. */
export interface Ed25519Signer {
  readonly did: string;
  readonly privateKey: KeyObject;
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
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  return { did: publicKeyToDidKey(spki.subarray(SPKI_PREFIX.length)), privateKey };
}

/** base64url (unpadded) Ed25519 signature over `message`. */
export function signEd25519(signer: Ed25519Signer, message: Uint8Array): string {
  return b64uEncode(nodeSign(null, message, signer.privateKey));
}

/** `{alg: "ed25519", key, value}`: the signature member of receipts, statements and attestations. */
export function ed25519Signature(signer: Ed25519Signer, message: Uint8Array): JsonObject {
  return new Map<string, JsonValue>([
    ["alg", "ed25519"],
    ["key", signer.did],
    ["value", signEd25519(signer, message)],
  ]);
}
