/**
 * Fixed inputs of the recorded-answers test: the identities written into every DATA_DIR
 * before the app is built, the clock, the payer's wallet, and the request bodies that are
 * not corpus files. Everything here is a constant or derived from one, so two runs send the
 * same bytes and, where the service lets them, get the same bytes back.
 */
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { CRYSTAL_SPEC } from "../../../src/crystals/envelope.js";
import { VALIDATOR_KEY_FILE } from "../../../src/erc8004/validator-key.js";
import { SERVICE_KEY_FILE } from "../../../src/service/service-key.js";
import { signerFromSeed } from "../../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../../src/verifier/json/dump.js";
import {
  buildRevocationDocument,
  signRevocationStatement,
} from "../../../src/verifier/revocations/document.js";
import { NOW_MS } from "../../payments/support.js";
import { corpusBytes } from "../../support/corpus.js";

/** The service's Ed25519 key: a fixed seed, so every receipt names the same issuer. */
export const SERVICE_SIGNER = signerFromSeed(new Uint8Array(32).fill(0x42));
/** The secp256k1 validator key of ERC-8004 attestations (`0x` + 64 hex, as the file holds). */
const VALIDATOR_KEY = `0x${"4b".repeat(32)}`;
export const VALIDATOR_ADDRESS = privateKeyToAccount(VALIDATOR_KEY as `0x${string}`).address;
/** The `POST /payment-receipts` token (`DATA_DIR/internal.token`). */
export const INTERNAL_TOKEN = "recorded-answers-internal-token-0123456789abcdef";

/** The services' clock: 2026-01-01T13:30:00Z, inside the payments helpers' signing window. */
export const T0 = NOW_MS + (13 * 3600 + 30 * 60) * 1000;

/** Writes the service key, validator key and internal token the app would otherwise create. */
export async function writeFixedIdentity(dataDir: string): Promise<void> {
  const pem = SERVICE_SIGNER.privateKey.export({ format: "pem", type: "pkcs8" }).toString();
  await writeFile(join(dataDir, SERVICE_KEY_FILE), pem, { mode: 0o600 });
  await writeFile(join(dataDir, VALIDATOR_KEY_FILE), `${VALIDATOR_KEY}\n`, { mode: 0o600 });
  await writeFile(join(dataDir, "internal.token"), INTERNAL_TOKEN, { mode: 0o600 });
}

export const MIB = 1024 * 1024;

export const corpusText = (file: string) => corpusBytes(file).toString("utf8");

export const sha256Hex = (data: Uint8Array | string) =>
  createHash("sha256").update(data).digest("hex");

/** 32 bytes named by `label`: distinct, fixed digests, nonces and ciphertexts. */
export const fixedBytes = (label: string, length = 32): Buffer => {
  const out: Buffer[] = [];
  for (let block = 0; out.length * 32 < length; block += 1) {
    out.push(createHash("sha256").update(`${label}/${block}`).digest());
  }
  return Buffer.concat(out).subarray(0, length);
};

// ---- revocation documents seeded into the store, as `receiptd revocations import` would ----

export const CORPUS_REVOKED_ISSUER = "did:key:z6MkfvFqL6qMAgXLopHUAKn1E4Mwf2HLwSrP6eTcu5vnfZZK";
export const CORPUS_REVOCATIONS = corpusBytes(
  "vectors/verification/12_revoked_issuer.revocations.json",
);
/** A third party of our own that revoked its key (a document we build and sign). */
export const OWN_REVOKED_SIGNER = signerFromSeed(new Uint8Array(32).fill(7));
export const OWN_REVOCATIONS = Buffer.from(
  dumpCompact(
    buildRevocationDocument(
      [
        signRevocationStatement(OWN_REVOKED_SIGNER, {
          revokedAt: "2030-01-01T00:00:00Z",
          reason: "recorded",
        }),
      ],
      "2030-01-02T00:00:00Z",
    ),
  ),
);
/** An issuer whose stored document is not JSON (a damaged store): served as 500. */
export const DAMAGED_ISSUER = signerFromSeed(new Uint8Array(32).fill(9)).did;
/** A well-formed issuer with nothing stored. */
export const UNKNOWN_ISSUER = signerFromSeed(new Uint8Array(32).fill(11)).did;

// ---- memory crystals: the host never opens the ciphertext, so fixed bytes stand in for it ----

export const TENANT = `sha256:${sha256Hex("recorded tenant")}`;
export const OTHER_TENANT = `sha256:${sha256Hex("recorded other tenant")}`;

export interface EnvelopeOptions {
  label: string;
  tenant?: string;
  parent?: string | null;
  cipher?: string;
  createdAt?: string;
  metadata?: Record<string, unknown>;
  /** Decoded ciphertext bytes (default 48). */
  size?: number;
}

export type Envelope = Record<string, unknown>;

/** A sealed-looking envelope: 12 fixed nonce bytes, `size` fixed ciphertext bytes. */
export function envelope(options: EnvelopeOptions): Envelope {
  const ciphertext = fixedBytes(`ciphertext ${options.label}`, options.size ?? 48);
  return {
    spec: CRYSTAL_SPEC,
    crystal_id: `sha256:${sha256Hex(ciphertext)}`,
    parent_crystal_id: options.parent ?? null,
    tenant_hash: options.tenant ?? TENANT,
    cipher: options.cipher ?? "chacha20-poly1305",
    nonce: fixedBytes(`nonce ${options.label}`, 12).toString("base64url"),
    ciphertext: ciphertext.toString("base64url"),
    size_bytes: ciphertext.length,
    created_at: options.createdAt ?? "2030-01-01T00:00:00Z",
    metadata_public: options.metadata ?? {},
  };
}
