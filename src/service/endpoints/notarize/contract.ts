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
  NOTARIZATION_KIND,
  NOTARIZATION_NOTE,
  NOTARIZATION_SPEC,
  NOTARIZATION_VERSION,
  REQUEST_FIELDS,
} from "../../../notarization/index.js";
import {
  type NotarizationQuotas,
  notarizationQuotaTerms,
} from "../../../notarization/ownership.js";
import type { ServiceLimits } from "../../config.js";
import type { Answer } from "../../errors.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import {
  notarizationAnswerSchema,
  notarizationRequestSchema,
  notarizationStatementSchema,
} from "../../schemas/notarization.js";
import { defineTask } from "../../tasks/define-task.js";
import type { InfoSection } from "../info-section.js";
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

const notarizationDigest = notarizationAnswerSchema.properties.digest;

const notarizeSchema = {
  description:
    "Signs a wm.context-notarization statement over the digests and claims given and stores " +
    "it under its digest; the service never sees the context behind them",
  // The worker parses the raw bytes strictly; the schema documents the body.
  body: notarizationRequestSchema,
  response: {
    200: {
      description:
        "the statement is signed and stored; `lookup_url` serves its stored document. A new " +
        "request is a new statement (a later issued_at); an Idempotency-Key retry gets this answer",
      ...notarizationAnswerSchema,
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
    403: {
      ...errorResponseSchema,
      description:
        "notarization_quota_exceeded: the stored statements of this principal " +
        "(NOTARIZATION_KEY_QUOTA_BYTES; an evaluation key: NOTARIZATION_EVALUATION_KEY_QUOTA_BYTES) " +
        "or of all evaluation keys together (NOTARIZATION_EVALUATION_QUOTA_BYTES) would pass " +
        "`limit` (GET /info); `held` is what they hold. Bytes come back as statements expire",
      properties: {
        ...errorResponseSchema.properties,
        limit: { type: "integer" },
        held: { type: "integer" },
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
        notarization: notarizationStatementSchema,
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
    "notarization_quota_exceeded",
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

/** `GET /notarize`'s `request` member: each field's rule, from the library's limits. */
const REQUEST_RULES: Record<(typeof REQUEST_FIELDS)[number], string> = {
  context_digest: "sha256:<64 hex> or 64 hex, either case; stored as sha256:<lower-case hex>",
  prompt_hash: "sha256:<64 hex> or 64 hex, either case; stored as sha256:<lower-case hex>",
  action: `string, at most ${MAX_ACTION_CHARS} characters`,
  model: `string, at most ${MAX_MODEL_CHARS} characters`,
  agent_id: `string, at most ${MAX_AGENT_ID_CHARS} characters`,
  metadata:
    `object, at most ${MAX_METADATA_ENTRIES} entries; keys non-empty ASCII of at most ` +
    `${MAX_METADATA_KEY_CHARS} characters; values strings of at most ` +
    `${MAX_METADATA_VALUE_CHARS} characters, integers with |n| <= 2^53 - 1, booleans or null`,
};

/** What `GET /notarize` and `/info` say of the service (the issuer is read per request). */
export function notarizationInfo(issuer: string, limits: ServiceLimits) {
  return {
    spec: NOTARIZATION_SPEC,
    kind: NOTARIZATION_KIND,
    version: NOTARIZATION_VERSION,
    issuer,
    endpoints: {
      notarize: "POST /notarize",
      lookup: "GET /notarize/{digest}",
      describe: "GET /notarize",
    },
    request: {
      fields: REQUEST_FIELDS,
      required: "at least one of context_digest and prompt_hash",
      rules: REQUEST_RULES,
      unknown_fields: "400 unsupported_fields, with every unknown member in `fields`",
      max_body_bytes: NOTARIZE_BODY_LIMIT_BYTES,
    },
    statement: {
      members: ["kind", "version", "issued_at", "issuer", ...REQUEST_FIELDS, "sig"],
      signature:
        "Ed25519 over the JCS (RFC 8785) bytes of the statement without sig; " +
        "sig = {alg: ed25519, key: <issuer did:key>, value: <base64url>}",
      digest: "sha256 of the same JCS bytes, as sha256:<hex>",
      issued_at: "whole UTC seconds",
    },
    lookup_url: "/notarize/<hex of the digest>",
    store:
      "each statement's document under its digest; files (embedded) or PostgreSQL; kept " +
      "ttl_days (quotas) and then removed by receiptd notarization expire",
    note: NOTARIZATION_NOTE,
    verify_offline: "receiptd notarization verify <file>",
    quotas: notarizationQuotaTerms(notarizationQuotas(limits), limits.notarizationTtlDays),
  };
}

/** The quotas of `limits` (src/notarization/ownership.ts). */
export function notarizationQuotas(limits: ServiceLimits): NotarizationQuotas {
  return {
    principalBytes: limits.notarizationPrincipalQuotaBytes,
    evaluationKeyBytes: limits.notarizationEvaluationKeyQuotaBytes,
    evaluationBytes: limits.notarizationEvaluationQuotaBytes,
  };
}

/** `/info`'s `notarization` section: `GET /notarize`'s answer, under the current issuer. */
export const notarizationInfoSection: InfoSection<ReturnType<typeof notarizationInfo>> = (app) =>
  notarizationInfo(app.serviceIdentity.signer().did, app.serviceConfig.limits);
