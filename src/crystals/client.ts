/**
 * The client side of memory crystals (service.md §6): seal plaintext into a `svc-crystal/1.0`
 * envelope and open one again. Everything secret stays here: the host receives only the
 * envelope, whose ciphertext is ChaCha20-Poly1305 or AES-256-GCM output under a 32-byte key
 * the client keeps, with a fresh random 12-byte nonce, the 16-byte tag appended, and the AAD
 * `<cipher>|<tenant_hash>|<parent or 'genesis'>|<created_at>` binding the ciphertext to its
 * place in the tenant's lineage (moving it elsewhere makes it fail to open).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { codedErrorClass } from "../verifier/coded-error.js";
import type { JsonObject } from "../verifier/json/value.js";
import {
  CRYSTAL_KEY_BYTES,
  CRYSTAL_NONCE_BYTES,
  CRYSTAL_SPEC,
  CRYSTAL_TAG_BYTES,
  type CrystalCipher,
  crystalAad,
  crystalIdOf,
  DEFAULT_CRYSTAL_CIPHER,
  decodeBase64url,
  isCrystalCipher,
  isSha256Id,
  rfc3339Instant,
} from "./envelope.js";

export interface CrystalEnvelope {
  spec: typeof CRYSTAL_SPEC;
  crystal_id: string;
  parent_crystal_id: string | null;
  tenant_hash: string;
  cipher: CrystalCipher;
  nonce: string;
  ciphertext: string;
  size_bytes: number;
  created_at: string;
  /** Public and unencrypted: plain data, or the strict parser's Map when read from JSON. */
  metadata_public: Record<string, unknown> | JsonObject;
}

export interface SealOptions {
  plaintext: Uint8Array;
  /** 32 bytes, for either cipher. */
  key: Uint8Array;
  tenantHash: string;
  /** The crystal this one follows; null or absent for a root. */
  parentCrystalId?: string | null;
  /** Defaults to chacha20-poly1305, the envelope's default. */
  cipher?: CrystalCipher;
  metadataPublic?: Record<string, unknown> | JsonObject;
  /** RFC 3339; defaults to now with milliseconds, so crystals sealed in one second still order. */
  createdAt?: string;
}

/** What `openCrystal` needs of an envelope; `cipher` may be left out (the default). */
export type OpenableEnvelope = Pick<
  CrystalEnvelope,
  "crystal_id" | "parent_crystal_id" | "tenant_hash" | "nonce" | "ciphertext" | "created_at"
> & { spec?: string; cipher?: string; size_bytes?: number };

export type CrystalOpenErrorCode = "crystal_unopenable";
/** An envelope that cannot be opened: malformed, altered, or the wrong key. */
export class CrystalOpenError extends codedErrorClass<CrystalOpenErrorCode>("crystal_unopenable") {
  override readonly name = "CrystalOpenError";
}

/**
 * A tenant hash from a tenant secret: `sha256:` + hex SHA-256 of its bytes. Knowing a tenant
 * hash is enough to read the tenant's envelopes and lineage (never its plaintext), so derive
 * it from a secret rather than from a guessable name.
 */
export function tenantHashOf(secret: Uint8Array | string): string {
  return `sha256:${createHash("sha256").update(secret).digest("hex")}`;
}

function checkKey(key: Uint8Array): void {
  if (key.length !== CRYSTAL_KEY_BYTES) {
    throw new RangeError(`a crystal key is ${CRYSTAL_KEY_BYTES} bytes, got ${key.length}`);
  }
}

// One call per cipher: node:crypto types each AEAD (and its tag options) by its own overload.
function aeadCipher(cipher: CrystalCipher, key: Uint8Array, nonce: Uint8Array) {
  return cipher === "aes-256-gcm"
    ? createCipheriv(cipher, key, nonce, { authTagLength: CRYSTAL_TAG_BYTES })
    : createCipheriv(cipher, key, nonce, { authTagLength: CRYSTAL_TAG_BYTES });
}

function aeadDecipher(cipher: CrystalCipher, key: Uint8Array, nonce: Uint8Array) {
  return cipher === "aes-256-gcm"
    ? createDecipheriv(cipher, key, nonce, { authTagLength: CRYSTAL_TAG_BYTES })
    : createDecipheriv(cipher, key, nonce, { authTagLength: CRYSTAL_TAG_BYTES });
}

/** Throws a RangeError naming the first option `sealCrystal` would refuse. */
export function checkSealOptions(options: Omit<SealOptions, "plaintext">): void {
  checkKey(options.key);
  if (!isSha256Id(options.tenantHash)) {
    throw new RangeError("the tenant hash must be sha256: and 64 lower-case hex digits");
  }
  const parent = options.parentCrystalId ?? null;
  if (parent !== null && !isSha256Id(parent)) {
    throw new RangeError("the parent must be sha256: and 64 lower-case hex digits");
  }
  const cipher = options.cipher ?? DEFAULT_CRYSTAL_CIPHER;
  if (!isCrystalCipher(cipher)) throw new RangeError(`unsupported cipher '${String(cipher)}'`);
  if (options.createdAt !== undefined && rfc3339Instant(options.createdAt) === null) {
    throw new RangeError("the creation time must be an RFC 3339 date-time");
  }
}

export function sealCrystal(options: SealOptions): CrystalEnvelope {
  checkSealOptions(options);
  const { plaintext, key, tenantHash } = options;
  const parentCrystalId = options.parentCrystalId ?? null;
  const cipher = options.cipher ?? DEFAULT_CRYSTAL_CIPHER;
  const createdAt = options.createdAt ?? new Date().toISOString();
  const nonce = randomBytes(CRYSTAL_NONCE_BYTES);
  const aead = aeadCipher(cipher, key, nonce);
  aead.setAAD(crystalAad(cipher, tenantHash, parentCrystalId, createdAt));
  const ciphertext = Buffer.concat([aead.update(plaintext), aead.final(), aead.getAuthTag()]);
  return {
    spec: CRYSTAL_SPEC,
    crystal_id: crystalIdOf(ciphertext),
    parent_crystal_id: parentCrystalId,
    tenant_hash: tenantHash,
    cipher,
    nonce: nonce.toString("base64url"),
    ciphertext: ciphertext.toString("base64url"),
    size_bytes: ciphertext.length,
    created_at: createdAt,
    metadata_public: options.metadataPublic ?? {},
  };
}

/**
 * The plaintext of `envelope`. Checks what the host checked too (spec, encodings, size,
 * `crystal_id`), so a copy altered anywhere on the way is refused, then decrypts; the tag
 * covers the AAD, so a changed tenant, parent, cipher or time fails like a changed byte.
 */
export function openCrystal(envelope: OpenableEnvelope, key: Uint8Array): Buffer {
  checkKey(key);
  if (envelope.spec !== undefined && envelope.spec !== CRYSTAL_SPEC) {
    throw new CrystalOpenError(`not a ${CRYSTAL_SPEC} envelope`);
  }
  const cipher = envelope.cipher ?? DEFAULT_CRYSTAL_CIPHER;
  if (!isCrystalCipher(cipher)) throw new CrystalOpenError(`unsupported cipher '${cipher}'`);
  const nonce = typeof envelope.nonce === "string" ? decodeBase64url(envelope.nonce) : null;
  if (nonce === null || nonce.length !== CRYSTAL_NONCE_BYTES) {
    throw new CrystalOpenError("the nonce is not base64url of 12 bytes");
  }
  const sealed =
    typeof envelope.ciphertext === "string" ? decodeBase64url(envelope.ciphertext) : null;
  if (sealed === null || sealed.length < CRYSTAL_TAG_BYTES) {
    throw new CrystalOpenError("the ciphertext is not base64url of an AEAD output");
  }
  if (envelope.size_bytes !== undefined && envelope.size_bytes !== sealed.length) {
    throw new CrystalOpenError("size_bytes does not match the ciphertext");
  }
  if (envelope.crystal_id !== crystalIdOf(sealed)) {
    throw new CrystalOpenError("crystal_id does not match the ciphertext");
  }
  const tagStart = sealed.length - CRYSTAL_TAG_BYTES;
  const aead = aeadDecipher(cipher, key, nonce);
  aead.setAAD(
    crystalAad(cipher, envelope.tenant_hash, envelope.parent_crystal_id, envelope.created_at),
  );
  aead.setAuthTag(sealed.subarray(tagStart));
  try {
    return Buffer.concat([aead.update(sealed.subarray(0, tagStart)), aead.final()]);
  } catch {
    throw new CrystalOpenError("authentication failed: the wrong key, or the envelope was altered");
  }
}
