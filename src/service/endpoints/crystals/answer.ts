/**
 * Worker-side handling of memory crystals (service.md §6), run on a CPU-pool thread
 * (`worker.ts`): `POST /crystals` bodies are parsed strictly and checked against every
 * envelope rule there, and lineages are built there from the stored summaries. The main thread
 * only does the storage (src/crystals/store.ts) and sends what it gets back.
 */
import {
  BASE64URL_PATTERN,
  CRYSTAL_CIPHERS,
  CRYSTAL_NONCE_BYTES,
  CRYSTAL_SPEC,
  DEFAULT_CRYSTAL_CIPHER,
  isCrystalRefusal,
  MAX_METADATA_PUBLIC_BYTES,
  RFC3339_PATTERN,
  SHA256_ID_PATTERN,
  validateEnvelope,
} from "../../../crystals/envelope.js";
import { lineageJson, lineageSummary } from "../../../crystals/lineage.js";
import type { PreparedCrystal } from "../../../crystals/store.js";
import { bodyValidator } from "../../../validation/body-validator.js";
import type { JsonValue } from "../../../verifier/json/value.js";
import {
  type Answer,
  type ErrorCode,
  errorAnswer,
  errorAnswerOf,
  parseRequestJson,
} from "../../errors.js";

const sha256Id = (description: string) =>
  ({ type: "string", pattern: SHA256_ID_PATTERN, description }) as const;

/** The envelope of service.md §6: the `POST /crystals` body, and what `GET` serves back. */
export const crystalEnvelopeSchema = {
  type: "object",
  description:
    `a ${CRYSTAL_SPEC} envelope: client-side encrypted state and its public facts. ` +
    "Stored and served in its JCS (RFC 8785) form, defaults filled in",
  required: [
    "spec",
    "crystal_id",
    "parent_crystal_id",
    "tenant_hash",
    "nonce",
    "ciphertext",
    "size_bytes",
    "created_at",
  ],
  additionalProperties: false,
  properties: {
    spec: { type: "string", const: CRYSTAL_SPEC },
    crystal_id: sha256Id("`sha256:` + hex SHA-256 of the ciphertext bytes"),
    parent_crystal_id: {
      type: ["string", "null"],
      pattern: SHA256_ID_PATTERN,
      description: "a crystal of the same tenant, or null for a root",
    },
    tenant_hash: sha256Id("the tenant, `sha256:<64 hex>` (e.g. of a tenant secret)"),
    cipher: {
      type: "string",
      enum: [...CRYSTAL_CIPHERS],
      default: DEFAULT_CRYSTAL_CIPHER,
      description: `the AEAD; absent means ${DEFAULT_CRYSTAL_CIPHER}`,
    },
    nonce: {
      type: "string",
      pattern: "^[A-Za-z0-9_-]{16}$",
      description: `base64url of the ${CRYSTAL_NONCE_BYTES}-byte nonce (16 characters, never padded)`,
    },
    ciphertext: {
      type: "string",
      pattern: BASE64URL_PATTERN,
      minLength: 22,
      description:
        "base64url of the AEAD output with its 16-byte tag appended, at most 2 MiB decoded; " +
        "padded (as Python's urlsafe_b64encode writes it) or not, served back as written. " +
        "AAD `<cipher>|<tenant_hash>|<parent_crystal_id or genesis>|<created_at>`",
    },
    size_bytes: { type: "integer", minimum: 16, description: "the decoded ciphertext's length" },
    created_at: { type: "string", pattern: RFC3339_PATTERN, description: "RFC 3339 date-time" },
    metadata_public: {
      type: "object",
      description: `public, unencrypted; at most ${MAX_METADATA_PUBLIC_BYTES} bytes in JCS form, no floats; absent means {}`,
    },
  },
} as const;

const validateEnvelopeSchema = bodyValidator(crystalEnvelopeSchema);

export interface CrystalPostTask {
  kind: "post";
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
  maxCiphertextBytes: number;
}

export interface CrystalLineageTask {
  kind: "lineage";
  tenantHash: string;
  /** The tenant's stored summary documents. */
  summaries: Uint8Array[];
}

export type CrystalTask = CrystalPostTask | CrystalLineageTask;

/** A refusal, to send as it is; or the documents to store. */
export type CrystalPostAnswer =
  | ({ kind: "reply" } & Answer)
  | ({ kind: "store" } & PreparedCrystal);

function reply(answer: Answer): CrystalPostAnswer {
  return { kind: "reply", ...answer };
}

/** `POST /crystals` from raw body bytes: a refusal, or the documents to store. */
export function prepareCrystalPost(
  bytes: Uint8Array,
  limits: { maxCiphertextBytes: number },
): CrystalPostAnswer {
  let body: JsonValue;
  try {
    body = parseRequestJson(bytes);
  } catch (error) {
    return reply(errorAnswerOf(error));
  }
  const crystal = validateEnvelope(body, limits);
  if (isCrystalRefusal(crystal)) {
    const { error, ...fields } = crystal;
    return reply(errorAnswer(error satisfies ErrorCode, fields));
  }
  // The rules above are finer than the published schema; this keeps the two from drifting.
  const violation = validateEnvelopeSchema(body);
  if (violation !== null) return reply(errorAnswer("bad_envelope", { detail: violation }));
  // Copies: Buffers may share a pooled ArrayBuffer, and these are moved to the main thread.
  return {
    kind: "store",
    crystalId: crystal.crystalId,
    parentCrystalId: crystal.parentCrystalId,
    tenantHash: crystal.tenantHash,
    sizeBytes: crystal.sizeBytes,
    envelope: new Uint8Array(crystal.canonical),
    summary: new Uint8Array(lineageSummary(crystal)),
  };
}

/** `GET /crystals/lineage`'s body for a tenant, from its summaries. */
export function answerLineage(task: CrystalLineageTask): string {
  return lineageJson(task.tenantHash, task.summaries);
}
