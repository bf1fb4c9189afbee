/**
 * The contract of context notarization (issue 28; docs/notarization.md): `POST /notarize`
 * signs a `wm.context-notarization` statement on a worker and the main thread stores it,
 * `GET /notarize/{digest}` serves a stored one, `GET /notarize` describes the service. The
 * request rules are the library's (src/notarization/request.ts); the schemas here only
 * document them, the worker's parse is what refuses.
 */
import {
  MAX_ACTION_CHARS,
  MAX_AGENT_ID_CHARS,
  MAX_METADATA_ENTRIES,
  MAX_METADATA_KEY_CHARS,
  MAX_METADATA_VALUE_CHARS,
  MAX_MODEL_CHARS,
} from "../../../notarization/request.js";
import type { Answer } from "../../errors.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";
import type { NotarizeTask, PreparedNotarization } from "./answer.js";

export const notarizeTask = defineTask<NotarizeTask, Answer | PreparedNotarization>(
  import.meta.url,
);

/**
 * `POST /notarize`'s body limit. The largest valid request is about 16 entries of a 64-char
 * key and a 256-char value, at most 6 bytes of JSON escape per character (`\uXXXX`) plus the
 * claims: far below 32 KiB for ordinary text, and room enough that only an absurdly escaped
 * body meets the limit before the rules refuse it.
 */
export const NOTARIZE_BODY_LIMIT_BYTES = 32 * 1024;

const digestInput = {
  type: "string",
  description: "`sha256:<64 hex>` or 64 hex, either case; stored as `sha256:<lower-case hex>`",
} as const;

const statementSchema = {
  type: "object",
  description:
    "the signed wm.context-notarization statement (version 1): Ed25519 over the JCS bytes " +
    "without `sig`, by `issuer`",
  required: ["kind", "version", "issued_at", "issuer", "sig"],
  additionalProperties: true,
  properties: {
    kind: { type: "string", const: "wm.context-notarization" },
    version: { type: "integer", const: 1 },
    issued_at: { type: "string", format: "date-time" },
    issuer: { type: "string", description: "did:key of the service key" },
    sig: {
      type: "object",
      required: ["alg", "key", "value"],
      properties: {
        alg: { type: "string", const: "ed25519" },
        key: { type: "string" },
        value: { type: "string", description: "base64url, unpadded" },
      },
    },
  },
} as const;

const notarizationDigest = {
  type: "string",
  description: "`sha256:<hex>` of the statement's JCS bytes without `sig`",
} as const;

const notarizeBodySchema = {
  type: "object",
  description:
    "digests and bounded claims the caller supplies; at least one of context_digest and " +
    "prompt_hash; any other member is refused (unsupported_fields, with the list)",
  properties: {
    context_digest: digestInput,
    prompt_hash: digestInput,
    action: { type: "string", description: `at most ${MAX_ACTION_CHARS} characters` },
    model: { type: "string", description: `at most ${MAX_MODEL_CHARS} characters` },
    agent_id: { type: "string", description: `at most ${MAX_AGENT_ID_CHARS} characters` },
    metadata: {
      type: "object",
      description:
        `at most ${MAX_METADATA_ENTRIES} entries; keys non-empty ASCII of at most ` +
        `${MAX_METADATA_KEY_CHARS} characters; values strings of at most ` +
        `${MAX_METADATA_VALUE_CHARS} characters, safe integers, booleans or null`,
    },
  },
} as const;

const notarizeSchema = {
  description:
    "Signs a wm.context-notarization statement over the digests and claims given and stores " +
    "it under its digest; the service never sees the context behind them",
  // The worker parses the raw bytes strictly; the schema documents the body.
  body: notarizeBodySchema,
  response: {
    200: {
      description:
        "the statement is signed and stored; `lookup_url` serves its stored document. A new " +
        "request is a new statement (a later issued_at); an Idempotency-Key retry gets this answer",
      type: "object",
      required: ["notarized", "digest", "receipt", "service", "lookup_url"],
      properties: {
        notarized: { type: "boolean", const: true },
        digest: notarizationDigest,
        receipt: statementSchema,
        service: { type: "string" },
        lookup_url: { type: "string", description: "`/notarize/<hex>`" },
      },
    },
    400: {
      ...errorResponseSchema,
      description:
        "invalid_json, or the rule the request breaks (docs/notarization.md); " +
        "unsupported_fields lists every unknown member in `fields`",
      properties: {
        ...errorResponseSchema.properties,
        fields: { type: "array", items: { type: "string" } },
        field: { type: "string" },
      },
    },
    ...commonErrorResponses,
  },
} as const;

const getNotarizationSchema = {
  description: "The stored document of a notarization: the statement, its digest, when stored",
  params: {
    type: "object",
    required: ["digest"],
    properties: {
      digest: {
        type: "string",
        description: "`sha256:<64 hex>` or 64 hex, either case (`:` may be percent-encoded)",
      },
    },
  },
  response: {
    200: {
      description: "the stored document, byte for byte as stored (strong ETag)",
      type: "object",
      required: ["notarization", "notarization_digest", "stored_at", "service", "note"],
      properties: {
        notarization: statementSchema,
        notarization_digest: notarizationDigest,
        stored_at: { type: "string", format: "date-time" },
        service: { type: "string" },
        note: { type: "string" },
      },
    },
    304: { description: "the client's copy (If-None-Match) is current", type: "null" },
    400: { ...errorResponseSchema, description: "invalid_digest" },
    404: { ...errorResponseSchema, description: "notarization_not_found" },
    ...commonErrorResponses,
  },
} as const;

const describeNotarizationSchema = {
  description: "What POST /notarize signs: the spec, the request fields and limits, the key",
  response: {
    200: {
      type: "object",
      required: ["spec", "kind", "version", "issuer", "request", "statement", "lookup_url"],
      additionalProperties: true,
      properties: {
        spec: { type: "string", const: "wm.context-notarization/1.0" },
        kind: { type: "string" },
        version: { type: "integer" },
        issuer: { type: "string", description: "did:key that signs new statements" },
        request: { type: "object", additionalProperties: true },
        statement: { type: "object", additionalProperties: true },
        lookup_url: { type: "string" },
      },
    },
  },
} as const;

export const notarizeOperation = defineOperation({
  method: "POST",
  url: "/notarize",
  operationId: "notarize",
  summary: "Notarize digests and claims",
  tag: "notarization",
  access: "keyed",
  refusals: [
    "invalid_json",
    "unsupported_fields",
    "missing_required_digest",
    "invalid_context_digest",
    "invalid_prompt_hash",
    "invalid_field",
    "invalid_metadata",
    "invalid_metadata_key",
    "invalid_metadata_value",
    "invalid_canonical_statement",
    "store_unavailable",
  ],
  schema: notarizeSchema,
});

export const getNotarizationOperation = defineOperation({
  method: "GET",
  url: "/notarize/:digest",
  operationId: "getNotarization",
  summary: "Read a stored notarization",
  tag: "notarization",
  access: "keyless",
  refusals: ["invalid_digest", "notarization_not_found", "store_unavailable"],
  schema: getNotarizationSchema,
});

export const describeNotarizationOperation = defineOperation({
  method: "GET",
  url: "/notarize",
  operationId: "describeNotarization",
  summary: "Describe context notarization",
  tag: "notarization",
  access: "keyless",
  refusals: [],
  schema: describeNotarizationSchema,
});
