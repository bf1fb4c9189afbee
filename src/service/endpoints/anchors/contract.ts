/**
 * The contract of the OpenTimestamps endpoints (service.md §1 `POST /verify-anchor`, §2
 * `POST /anchors`, `GET /anchors/{digest}`): their operations, schemas and worker tasks.
 * `verify` answers `POST /verify-anchor`, `store` checks a `POST /anchors` body before it is
 * queued. Routes and `worker.ts` share this module.
 */
import { ANCHOR_DIGEST_PATTERN } from "../../../../queues/anchors.js";
import type { Answer } from "../../errors.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";
import type { AnchorStoreRequest, AnchorTask } from "./answer.js";

export const verifyAnchorTask = defineTask<AnchorTask, Answer>(import.meta.url, "verify");

export const prepareAnchorTask = defineTask<AnchorTask, Answer | AnchorStoreRequest>(
  import.meta.url,
  "store",
);

/** Standard base64 (RFC 4648 §4) with its padding. */
export const BASE64_PATTERN = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";
export const HEX_PATTERN = "^(?:[0-9a-fA-F]{2})*$";

/** Decimal without leading zeros, so two keys can never name the same height. */
export const HEIGHT_KEY_PATTERN = "^(?:0|[1-9][0-9]*)$";

const NOTE_MAX_CHARACTERS = 512;

const proofSchema = {
  type: "string",
  pattern: BASE64_PATTERN,
  description: "a detached OpenTimestamps proof (.ots), standard base64 with padding",
} as const;

const headerSchema = {
  type: "string",
  pattern: HEX_PATTERN,
  description: "an 80-byte Bitcoin block header, 160 hex characters",
} as const;

export const verifyAnchorBodySchema = {
  type: "object",
  description:
    "the proof, the digest it should commit to, and optionally block headers: either `headers` " +
    "(by height) or one `header` with its `height`",
  required: ["proof", "digest"],
  additionalProperties: false,
  properties: {
    proof: proofSchema,
    digest: {
      type: "string",
      description: "`sha256:<hex>` or `<hex>`; a string the verifier cannot use is `bad_digest`",
    },
    headers: {
      type: "object",
      description: "block headers keyed by decimal block height",
      propertyNames: { pattern: HEIGHT_KEY_PATTERN },
      additionalProperties: headerSchema,
    },
    header: headerSchema,
    height: { type: "integer", minimum: 0, description: "the block height of `header`" },
  },
} as const;

export const postAnchorBodySchema = {
  type: "object",
  description: "a proof to host for `digest`; its file digest must equal `digest`",
  required: ["digest", "proof"],
  additionalProperties: false,
  properties: {
    digest: {
      type: "string",
      pattern: ANCHOR_DIGEST_PATTERN,
      description: "`sha256:` and 64 hex digits (stored in lower case)",
    },
    proof: proofSchema,
    note: {
      type: ["string", "null"],
      maxLength: NOTE_MAX_CHARACTERS,
      description: `free text stored with the proof, at most ${NOTE_MAX_CHARACTERS} characters`,
    },
  },
} as const;

/** An attestation as AnchorResult and stored anchor documents list it (verifier.md §8.2). */
export const attestationSchema = {
  type: "object",
  required: ["kind"],
  properties: {
    kind: { type: "string", enum: ["pending", "bitcoin", "litecoin", "unknown"] },
    value: {
      type: ["string", "integer"],
      description: "calendar URI (pending) or block height (bitcoin, litecoin)",
    },
    tag: { type: "string", description: "hex attestation tag (unknown)" },
    payload: { type: "string", description: "hex payload (unknown)" },
  },
} as const;

export const anchorResultSchema = {
  description:
    "the AnchorResult of verifier.md §8.4 plus `service`; only merkle-root equality with the " +
    "supplied headers is checked (no proof-of-work, no header chain)",
  type: "object",
  required: ["status", "code", "detail", "file_digest", "attestations", "service"],
  properties: {
    status: { type: "string", enum: ["verified", "unverified", "mismatch", "invalid"] },
    code: { type: "string" },
    detail: { type: "string" },
    file_digest: {
      type: "string",
      description: "`<hash op>:<hex>`, empty if the proof did not parse",
    },
    attestations: { type: "array", items: attestationSchema },
    confirmed: {
      type: "object",
      description: "present only when verified",
      properties: {
        block_height: { type: "integer" },
        merkle_root: { type: "string" },
        header_time: { type: "integer" },
      },
    },
    service: { type: "string" },
  },
} as const;

const digestMember = {
  type: "string",
  description: "`sha256:<64 lower-case hex>`",
} as const;

const postAnchorSchema = {
  description:
    "Hosts an OpenTimestamps proof for a digest; a proof with more attestations replaces it",
  body: postAnchorBodySchema,
  response: {
    200: {
      description:
        "the write is durable; `outcome`: created, replaced (upgraded proof), unchanged (same " +
        "proof) or kept (the stored proof has as many attestations or more); `status` and " +
        "`bytes` describe the proof stored now",
      type: "object",
      required: ["stored", "digest", "status", "bytes", "outcome"],
      properties: {
        stored: { type: "boolean", const: true },
        digest: digestMember,
        status: { type: "string" },
        bytes: { type: "integer", description: "size of the stored proof" },
        outcome: { type: "string", enum: ["created", "replaced", "unchanged", "kept"] },
      },
    },
    202: {
      description: "accepted but not yet durable; poll `status_url`",
      type: "object",
      required: ["stored", "digest", "status_url"],
      properties: {
        stored: { type: "boolean", const: false },
        digest: digestMember,
        status_url: { type: "string" },
      },
    },
    400: {
      ...errorResponseSchema,
      description:
        "invalid_json, bad_request, invalid_digest, invalid_proof_encoding, or proof_rejected " +
        "with the anchor `code` (verifier.md §8.4)",
      properties: { ...errorResponseSchema.properties, code: { type: "string" } },
    },
    403: {
      ...errorResponseSchema,
      description:
        "anchor_quota_exceeded: this principal's proof bytes (`limit`, ANCHOR_KEY_QUOTA_BYTES, " +
        "GET /info) are used up; `held` is what it has submitted",
      properties: {
        ...errorResponseSchema.properties,
        limit: { type: "integer" },
        held: { type: "integer" },
      },
    },
    ...commonErrorResponses,
  },
} as const;

const getAnchorSchema = {
  description: "The stored anchor document for a digest",
  params: {
    type: "object",
    required: ["digest"],
    properties: {
      digest: {
        type: "string",
        pattern: ANCHOR_DIGEST_PATTERN,
        description: "`sha256:<64 hex>` (`:` may be percent-encoded; hex of either case)",
      },
    },
  },
  response: {
    200: {
      description: "the stored document, byte for byte as stored (strong ETag)",
      type: "object",
      required: ["digest", "proof", "note", "status", "stored_at", "attestations"],
      properties: {
        digest: digestMember,
        proof: { type: "string", description: "standard base64 of the .ots proof" },
        note: { type: ["string", "null"] },
        status: { type: "string" },
        stored_at: { type: "string", format: "date-time" },
        attestations: { type: "array", items: attestationSchema },
      },
    },
    304: { description: "the client's copy (If-None-Match) is current", type: "null" },
    400: { ...errorResponseSchema, description: "invalid_digest" },
    404: { ...errorResponseSchema, description: "anchor_not_found" },
    ...commonErrorResponses,
  },
} as const;

const verifyAnchorSchema = {
  description:
    "Verifies a detached OpenTimestamps proof against a digest and optional Bitcoin block headers",
  body: verifyAnchorBodySchema,
  response: {
    200: anchorResultSchema,
    400: {
      ...errorResponseSchema,
      description:
        "invalid_json, bad_request, invalid_proof_encoding, invalid_header_encoding or invalid_height",
    },
    ...commonErrorResponses,
  },
} as const;

export const verifyAnchorOperation = defineOperation({
  method: "POST",
  url: "/verify-anchor",
  operationId: "verifyAnchor",
  summary: "Verify an OpenTimestamps proof",
  tag: "anchors",
  access: "keyed",
  refusals: [
    "bad_request",
    "invalid_json",
    "invalid_proof_encoding",
    "invalid_header_encoding",
    "invalid_height",
  ],
  schema: verifyAnchorSchema,
});

export const storeAnchorOperation = defineOperation({
  method: "POST",
  url: "/anchors",
  operationId: "storeAnchor",
  summary: "Host an anchor proof",
  tag: "anchors",
  access: "keyed",
  refusals: [
    "bad_request",
    "invalid_json",
    "invalid_digest",
    "invalid_proof_encoding",
    "proof_rejected",
    "anchor_quota_exceeded",
  ],
  schema: postAnchorSchema,
});

export const getAnchorOperation = defineOperation({
  method: "GET",
  url: "/anchors/:digest",
  operationId: "getAnchor",
  summary: "Read a hosted anchor proof",
  tag: "anchors",
  access: "keyless",
  refusals: ["invalid_digest", "anchor_not_found"],
  schema: getAnchorSchema,
});
