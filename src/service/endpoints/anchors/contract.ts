/**
 * The contract of the OpenTimestamps endpoints (service.md §1 `POST /verify-anchor`, §2
 * `POST /anchors`, `GET /anchors/{digest}`): their operations, schemas and worker tasks.
 * `verify` answers `POST /verify-anchor`, `store` checks a `POST /anchors` body before it is
 * queued. Routes and `worker.ts` share this module.
 */
import { ANCHOR_DIGEST_PATTERN } from "../../../../queues/anchors.js";
import type { Answer } from "../../errors.js";
import {
  anchorResultSchema,
  attestationSchema,
  proofSchema,
  verifyAnchorBodySchema,
} from "../../schemas/anchor.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";
import type { AnchorStoreRequest, AnchorTask } from "./answer.js";

export const verifyAnchorTask = defineTask<AnchorTask, Answer>(import.meta.url, "verify");

export const prepareAnchorTask = defineTask<AnchorTask, Answer | AnchorStoreRequest>(
  import.meta.url,
  "store",
);

const NOTE_MAX_CHARACTERS = 512;

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
        "anchor_quota_exceeded: this principal's stored anchor bytes (`limit`, " +
        "ANCHOR_KEY_QUOTA_BYTES or ANCHOR_EVALUATION_KEY_QUOTA_BYTES, GET /info) are used up; " +
        "`held` is what its anchors take",
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
    "queue_full",
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
