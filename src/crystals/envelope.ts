/**
 * The memory crystal envelope (service.md §6, spec `svc-crystal/1.0`): client-side encrypted
 * state plus the public facts the host needs to file it. The host never sees plaintext or
 * keys; it checks that every member is well formed, that `crystal_id` and `size_bytes` say
 * what the ciphertext bytes are, and keeps the envelope in one canonical form (JCS), with the
 * base64url spelled as its writer spelled it (padded or not).
 *
 * Pure and synchronous: the service runs it on a CPU-pool thread
 * (src/service/endpoints/crystals/worker.ts), the client helper (client.ts) shares its
 * constants and encodings.
 */
import { createHash } from "node:crypto";
import { CanonicalizationError, canonicalBytes } from "../verifier/json/canonical.js";
import { isInteger, isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";
import { type Instant, RFC3339_PATTERN, rfc3339Instant } from "../verifier/timestamps.js";

// The RFC 3339 grammar lives with the verifier's timestamps (one parser module); crystals and
// their endpoint name it through here.
export { type Instant, RFC3339_PATTERN, rfc3339Instant };

export const CRYSTAL_SPEC = "svc-crystal/1.0";
export const CRYSTAL_CIPHERS = ["chacha20-poly1305", "aes-256-gcm"] as const;
export type CrystalCipher = (typeof CRYSTAL_CIPHERS)[number];
/** What an envelope without `cipher` was sealed with (service.md §6). */
export const DEFAULT_CRYSTAL_CIPHER: CrystalCipher = "chacha20-poly1305";

export const CRYSTAL_KEY_BYTES = 32;
export const CRYSTAL_NONCE_BYTES = 12;
/** The AEAD tag both ciphers append: the shortest ciphertext is an empty plaintext's tag. */
export const CRYSTAL_TAG_BYTES = 16;
/** `metadata_public` is at most this many bytes in its canonical (JCS) form. */
export const MAX_METADATA_PUBLIC_BYTES = 4096;
/** The AAD's parent part for a crystal without a parent. */
export const GENESIS = "genesis";

/** Members in the order service.md §6 lists them; nothing else is allowed. */
export const ENVELOPE_MEMBERS = [
  "spec",
  "crystal_id",
  "parent_crystal_id",
  "tenant_hash",
  "cipher",
  "nonce",
  "ciphertext",
  "size_bytes",
  "created_at",
  "metadata_public",
] as const;

/** Members that may be left out, and what leaving them out means. */
const OPTIONAL_MEMBERS: ReadonlySet<string> = new Set(["cipher", "metadata_public"]);

/** Lower-case only: one spelling per id, since ids are compared and filed as strings. */
export const SHA256_ID_PATTERN = "^sha256:[0-9a-f]{64}$";
const SHA256_ID = new RegExp(SHA256_ID_PATTERN);
/** RFC 4648 §5 alphabet, with or without the `=` padding of RFC 4648 §3.2. */
export const BASE64URL_PATTERN = "^[A-Za-z0-9_-]*={0,2}$";
const UNPADDED_BASE64URL = /^[A-Za-z0-9_-]*$/;
const EQUALS = 0x3d;
const QUOTE = 0x22;

export function isSha256Id(value: unknown): value is string {
  return typeof value === "string" && SHA256_ID.test(value);
}

export function isCrystalCipher(value: unknown): value is CrystalCipher {
  return typeof value === "string" && (CRYSTAL_CIPHERS as readonly string[]).includes(value);
}

/** `sha256:` + hex SHA-256 of the ciphertext bytes. */
export function crystalIdOf(ciphertext: Uint8Array): string {
  return `sha256:${createHash("sha256").update(ciphertext).digest("hex")}`;
}

/** The AEAD's associated data: `<cipher>|<tenant_hash>|<parent or 'genesis'>|<created_at>`. */
export function crystalAad(
  cipher: string,
  tenantHash: string,
  parentCrystalId: string | null,
  createdAt: string,
): Buffer {
  return Buffer.from(`${cipher}|${tenantHash}|${parentCrystalId ?? GENESIS}|${createdAt}`, "utf8");
}

/**
 * Strict base64url, padded or not: Python's `urlsafe_b64encode` pads and its
 * `urlsafe_b64decode` needs the padding, most other encoders leave it out, and clients of both
 * kinds write crystals. Everything else stays strict: the alphabet only (no whitespace, no
 * `+` or `/`), a length a byte string can have, `=` only at the end and exactly as many as
 * the length needs (the padded text is a multiple of 4 long), and zero unused bits. So a byte
 * string has two spellings, or one when its length is a multiple of 3. Null for anything else.
 */
export function decodeBase64url(text: string): Buffer | null {
  const unpadded = withoutPadding(text);
  if (unpadded === null || unpadded.length % 4 === 1 || !UNPADDED_BASE64URL.test(unpadded)) {
    return null;
  }
  const bytes = Buffer.from(unpadded, "base64url");
  return bytes.toString("base64url") === unpadded ? bytes : null;
}

/** `text` without its padding, or null when the padding is not what RFC 4648 §3.2 puts there. */
function withoutPadding(text: string): string | null {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === EQUALS) end -= 1;
  const padding = text.length - end;
  if (padding === 0) return text;
  // Padding completes the last 4-character group: one `=` after 3 characters, two after 2.
  return padding <= 2 && text.length % 4 === 0 ? text.slice(0, end) : null;
}

/**
 * In a stored envelope (JCS, members sorted), `cipher` comes first and holds one of
 * CRYSTAL_CIPHERS, so the first occurrence of this is the `ciphertext` member.
 */
const CIPHERTEXT_MEMBER = Buffer.from('"ciphertext":"', "latin1");

/**
 * A stored envelope around its ciphertext's padding: what comes before the padding and what
 * comes from the closing quote on. Base64url has no `"` or `\`, so the first `"` after the
 * value's start ends it.
 */
function aroundPadding(envelope: Buffer): [Buffer, Buffer] | null {
  const member = envelope.indexOf(CIPHERTEXT_MEMBER);
  if (member < 0) return null;
  const start = member + CIPHERTEXT_MEMBER.length;
  const close = envelope.indexOf(QUOTE, start);
  if (close < 0) return null;
  let end = close;
  while (end > start && envelope[end - 1] === EQUALS) end -= 1;
  return [envelope.subarray(0, end), envelope.subarray(close)];
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Whether two stored forms (`ValidCrystal.canonical`) are one crystal: the same bytes, or the
 * same bytes but for the ciphertext's padding, since a padded and an unpadded spelling name the
 * same ciphertext (and so the same `crystal_id`). The nonce needs no such care: 12 bytes are
 * 16 characters, never padded. Compares in place, without copying either envelope.
 */
export function sameCrystal(left: Uint8Array, right: Uint8Array): boolean {
  const a = asBuffer(left);
  const b = asBuffer(right);
  if (a.equals(b)) return true;
  const aParts = aroundPadding(a);
  const bParts = aroundPadding(b);
  return (
    aParts !== null && bParts !== null && aParts[0].equals(bParts[0]) && aParts[1].equals(bParts[1])
  );
}

/**
 * Why an envelope is refused. These are public error codes of the service (`ERROR_STATUS` in
 * src/service/errors.ts gives each its status: 413 for `ciphertext_too_large`, else 400), so
 * the service types them against its code union.
 */
export type EnvelopeErrorCode =
  | "bad_envelope"
  | "unknown_member"
  | "missing_member"
  | "unsupported_spec"
  | "invalid_crystal_id"
  | "invalid_parent_crystal_id"
  | "invalid_tenant_hash"
  | "unsupported_cipher"
  | "invalid_nonce"
  | "invalid_ciphertext"
  | "ciphertext_too_large"
  | "invalid_size_bytes"
  | "size_mismatch"
  | "crystal_id_mismatch"
  | "invalid_created_at"
  | "invalid_metadata_public"
  | "metadata_too_large";

/** A refused envelope: a stable code, what is wrong, and the limit a size passed. */
export interface CrystalRefusal {
  error: EnvelopeErrorCode;
  detail: string;
  limit?: number;
}

/** An envelope that passed every rule, with its defaults filled in. */
export interface ValidCrystal {
  crystalId: string;
  parentCrystalId: string | null;
  tenantHash: string;
  cipher: CrystalCipher;
  sizeBytes: number;
  createdAt: string;
  metadataPublic: JsonObject;
  /**
   * The envelope as stored and served: JCS (RFC 8785) of every member, defaults included,
   * `nonce` and `ciphertext` as written (so a client that pads reads back padding).
   */
  canonical: Buffer;
}

export interface EnvelopeLimits {
  /** Decoded ciphertext bytes allowed (service.md §12: 2 MiB). */
  maxCiphertextBytes: number;
}

const refuse = (error: EnvelopeErrorCode, detail: string): CrystalRefusal => ({ error, detail });

const SHA256_ID_FORM = "sha256: and 64 lower-case hex digits";

/**
 * Checks an envelope against every rule of service.md §6, in a fixed order: the body's shape
 * (an object, no unknown member, no missing member), then each member in the order the
 * contract lists them, then what the ciphertext bytes must agree with (`size_bytes`,
 * `crystal_id`). The first broken rule is the answer.
 */
export function validateEnvelope(
  body: JsonValue,
  limits: EnvelopeLimits,
): ValidCrystal | CrystalRefusal {
  if (!isObject(body)) return refuse("bad_envelope", "body must be a crystal envelope object");
  for (const name of body.keys()) {
    if (!(ENVELOPE_MEMBERS as readonly string[]).includes(name)) {
      return refuse("unknown_member", `'${name}' is not a member of a ${CRYSTAL_SPEC} envelope`);
    }
  }
  for (const name of ENVELOPE_MEMBERS) {
    if (!body.has(name) && !OPTIONAL_MEMBERS.has(name)) {
      return refuse("missing_member", `'${name}' is required`);
    }
  }
  const spec = body.get("spec");
  if (spec !== CRYSTAL_SPEC) {
    return refuse("unsupported_spec", `spec must be '${CRYSTAL_SPEC}'`);
  }
  const crystalId = body.get("crystal_id");
  if (!isSha256Id(crystalId)) {
    return refuse("invalid_crystal_id", `crystal_id must be ${SHA256_ID_FORM}`);
  }
  const parent = body.get("parent_crystal_id");
  if (parent !== null && !isSha256Id(parent)) {
    return refuse(
      "invalid_parent_crystal_id",
      `parent_crystal_id must be null or ${SHA256_ID_FORM}`,
    );
  }
  if (parent === crystalId) {
    return refuse("invalid_parent_crystal_id", "a crystal cannot be its own parent");
  }
  const tenantHash = body.get("tenant_hash");
  if (!isSha256Id(tenantHash)) {
    return refuse("invalid_tenant_hash", `tenant_hash must be ${SHA256_ID_FORM}`);
  }
  const cipher = body.has("cipher") ? body.get("cipher") : DEFAULT_CRYSTAL_CIPHER;
  if (!isCrystalCipher(cipher)) {
    return refuse("unsupported_cipher", `cipher must be one of ${CRYSTAL_CIPHERS.join(", ")}`);
  }
  const nonceText = body.get("nonce");
  const nonce = typeof nonceText === "string" ? decodeBase64url(nonceText) : null;
  if (nonce === null || nonce.length !== CRYSTAL_NONCE_BYTES) {
    return refuse(
      "invalid_nonce",
      `nonce must be base64url of exactly ${CRYSTAL_NONCE_BYTES} bytes`,
    );
  }
  const ciphertextText = body.get("ciphertext");
  const ciphertext = typeof ciphertextText === "string" ? decodeBase64url(ciphertextText) : null;
  if (ciphertext === null) {
    return refuse(
      "invalid_ciphertext",
      "ciphertext must be base64url, padded or not, with no whitespace and zero unused bits",
    );
  }
  if (ciphertext.length > limits.maxCiphertextBytes) {
    return {
      ...refuse("ciphertext_too_large", `the decoded ciphertext is ${ciphertext.length} bytes`),
      limit: limits.maxCiphertextBytes,
    };
  }
  if (ciphertext.length < CRYSTAL_TAG_BYTES) {
    return refuse(
      "invalid_ciphertext",
      `ciphertext must hold at least the ${CRYSTAL_TAG_BYTES}-byte authentication tag`,
    );
  }
  const sizeBytes = body.get("size_bytes");
  if (!isInteger(sizeBytes) || typeof sizeBytes === "bigint" || sizeBytes < 0) {
    return refuse("invalid_size_bytes", "size_bytes must be a non-negative integer");
  }
  if (sizeBytes !== ciphertext.length) {
    return refuse(
      "size_mismatch",
      `size_bytes is ${sizeBytes} but the ciphertext is ${ciphertext.length} bytes`,
    );
  }
  const actualId = crystalIdOf(ciphertext);
  if (crystalId !== actualId) {
    return refuse("crystal_id_mismatch", `the ciphertext's crystal_id is ${actualId}`);
  }
  const createdAt = body.get("created_at");
  if (typeof createdAt !== "string" || rfc3339Instant(createdAt) === null) {
    return refuse("invalid_created_at", "created_at must be an RFC 3339 date-time");
  }
  const metadata = body.has("metadata_public") ? body.get("metadata_public") : new Map();
  if (!isObject(metadata)) {
    return refuse("invalid_metadata_public", "metadata_public must be an object");
  }
  let metadataBytes: Buffer;
  try {
    metadataBytes = canonicalBytes(metadata);
  } catch (error) {
    if (!(error instanceof CanonicalizationError)) throw error;
    return refuse(
      "invalid_metadata_public",
      "metadata_public must have a canonical form: no floats, no lone surrogates",
    );
  }
  if (metadataBytes.length > MAX_METADATA_PUBLIC_BYTES) {
    return {
      ...refuse(
        "metadata_too_large",
        `metadata_public is ${metadataBytes.length} bytes in canonical form`,
      ),
      limit: MAX_METADATA_PUBLIC_BYTES,
    };
  }
  const envelope: JsonObject = new Map<string, JsonValue>([
    ["spec", CRYSTAL_SPEC],
    ["crystal_id", crystalId],
    ["parent_crystal_id", parent],
    ["tenant_hash", tenantHash],
    ["cipher", cipher],
    ["nonce", nonceText as string],
    ["ciphertext", ciphertextText as string],
    ["size_bytes", sizeBytes],
    ["created_at", createdAt],
    ["metadata_public", metadata],
  ]);
  return {
    crystalId,
    parentCrystalId: parent,
    tenantHash,
    cipher,
    sizeBytes,
    createdAt,
    metadataPublic: metadata,
    canonical: canonicalBytes(envelope),
  };
}

export function isCrystalRefusal(value: ValidCrystal | CrystalRefusal): value is CrystalRefusal {
  return "error" in value;
}
