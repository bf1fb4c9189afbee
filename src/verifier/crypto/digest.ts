/** `sha256:<hex>` digests over canonical bytes (verifier.md §2). */
import { canonicalBytes } from "../json/canonical.js";
import type { JsonValue } from "../json/value.js";
import { verifierCrypto } from "./provider.js";

export const SHA256_DIGEST = /^sha256:[0-9a-f]{64}$/;

export function sha256Hex(data: Uint8Array | string): string {
  return verifierCrypto().sha256Hex(data);
}

export function sha256Digest(data: Uint8Array | string): string {
  return `sha256:${sha256Hex(data)}`;
}

/** Digest of a receipt (or any signed record): canonical bytes without its `sig` member. */
export function recordDigest(record: JsonValue): string {
  return sha256Digest(canonicalBytes(record, "sig"));
}

/** Digest of a whole value, e.g. the bundle digest of a verification receipt. */
export function valueDigest(value: JsonValue): string {
  return sha256Digest(canonicalBytes(value));
}
