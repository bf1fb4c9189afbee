/**
 * The contract of memory crystals (service.md §6: `POST /crystals`, `GET /crystals/{id}`,
 * `GET /crystals/lineage`): their operations, schemas and worker tasks. `post` checks and
 * prepares a `POST /crystals` body, `lineage` builds `GET /crystals/lineage`'s answer from the
 * stored summaries. The route and `worker.ts` share this module.
 */
import {
  BASE64URL_PATTERN,
  CRYSTAL_CIPHERS,
  CRYSTAL_NONCE_BYTES,
  CRYSTAL_SPEC,
  DEFAULT_CRYSTAL_CIPHER,
  ENVELOPE_MEMBERS,
  MAX_METADATA_PUBLIC_BYTES,
  RFC3339_PATTERN,
  SHA256_ID_PATTERN,
} from "../../../crystals/envelope.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import type { InfoSection } from "../info-section.js";
import { defineOperation } from "../operation.js";
import type { CrystalLineageTask, CrystalPostAnswer, CrystalPostTask } from "./answer.js";

export const prepareCrystalTask = defineTask<CrystalPostTask, CrystalPostAnswer>(
  import.meta.url,
  "post",
);

/** Answers the lineage's JSON text. */
export const lineageTask = defineTask<CrystalLineageTask, string>(import.meta.url, "lineage");

export const TENANT_HEADER = "x-tenant-hash";
/** Reads accept hex of either case and look it up in lower case, the only case stored. */
const SHA256_ID_ANY_CASE_PATTERN = "^sha256:[0-9a-fA-F]{64}$";

const sha256Id = (description: string) =>
  ({ type: "string", pattern: SHA256_ID_PATTERN, description }) as const;

const tenantErrors =
  "missing_tenant, invalid_tenant_hash, ambiguous_tenant (header and query differ)";

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

const sha256Text = { type: "string", description: "`sha256:<64 hex>`" } as const;

const storedSchema = {
  type: "object",
  required: ["stored", "crystal_id", "parent_crystal_id", "tenant_hash", "size_bytes"],
  properties: {
    stored: { type: "boolean", const: true },
    crystal_id: sha256Text,
    parent_crystal_id: { type: ["string", "null"] },
    tenant_hash: sha256Text,
    size_bytes: { type: "integer" },
  },
} as const;

const postCrystalSchema = {
  description:
    "Stores a sealed memory crystal; the first principal to write a tenant owns it, and a " +
    "parent must be a crystal of the same tenant",
  body: crystalEnvelopeSchema,
  response: {
    200: {
      ...storedSchema,
      description:
        "this envelope was already stored, in this or the other base64url spelling " +
        "(idempotent; the stored spelling is kept)",
    },
    201: { ...storedSchema, description: "stored; `Location` names the crystal and its tenant" },
    400: {
      ...errorResponseSchema,
      description:
        "invalid_json, bad_envelope, unknown_member, missing_member, unsupported_spec, " +
        "invalid_crystal_id, invalid_parent_crystal_id, invalid_tenant_hash, " +
        "unsupported_cipher, invalid_nonce, invalid_ciphertext, invalid_size_bytes, " +
        "size_mismatch, crystal_id_mismatch, invalid_created_at, invalid_metadata_public, " +
        "metadata_too_large (with `limit`)",
    },
    403: {
      ...errorResponseSchema,
      description:
        "tenant_forbidden: another principal owns it; crystal_quota_exceeded: the tenant's or the principal's byte quota is used up",
    },
    409: { ...errorResponseSchema, description: "crystal_conflict: stored with another envelope" },
    422: { ...errorResponseSchema, description: "parent_not_found in this tenant" },
    429: {
      ...errorResponseSchema,
      description:
        "too_many_uploads: this principal is already sending `limit` crystal bodies " +
        "(`max_crystal_uploads_per_key`, GET /info); or daily_cap_reached",
    },
    ...commonErrorResponses,
    413: {
      ...errorResponseSchema,
      description:
        "body_too_large (the 4 MiB body limit) or ciphertext_too_large (2 MiB decoded); " +
        "`limit` is the limit in bytes",
    },
  },
} as const;

const tenantQuerystring = {
  type: "object",
  properties: {
    tenant: {
      type: "string",
      pattern: SHA256_ID_ANY_CASE_PATTERN,
      description: `the tenant hash; or the \`X-Tenant-Hash\` header (one of them is required)`,
    },
  },
} as const;

const tenantHeaders = {
  type: "object",
  properties: {
    [TENANT_HEADER]: {
      type: "string",
      pattern: SHA256_ID_ANY_CASE_PATTERN,
      description: "the tenant hash; or `?tenant=`",
    },
  },
} as const;

const getCrystalSchema = {
  description: "The stored envelope of a crystal, to a client that names its tenant",
  params: {
    type: "object",
    required: ["crystal_id"],
    properties: {
      crystal_id: {
        type: "string",
        pattern: SHA256_ID_ANY_CASE_PATTERN,
        description: "`sha256:<64 hex>` (`:` may be percent-encoded)",
      },
    },
  },
  querystring: tenantQuerystring,
  headers: tenantHeaders,
  response: {
    200: {
      ...crystalEnvelopeSchema,
      required: [...ENVELOPE_MEMBERS],
      description: "the envelope in its stored JCS form; `ETag` is the quoted crystal id",
    },
    304: { description: "the client's copy (If-None-Match) is current", type: "null" },
    400: { ...errorResponseSchema, description: `invalid_crystal_id, ${tenantErrors}` },
    404: {
      ...errorResponseSchema,
      description: "crystal_not_found: no such crystal in this tenant (the same for any tenant)",
    },
    ...commonErrorResponses,
  },
} as const;

const lineageEntrySchema = {
  type: "object",
  required: ["crystal_id", "parent_crystal_id", "size_bytes", "created_at", "metadata_public"],
  properties: {
    crystal_id: sha256Text,
    parent_crystal_id: { type: ["string", "null"] },
    size_bytes: { type: "integer" },
    created_at: { type: "string", pattern: RFC3339_PATTERN },
    metadata_public: { type: "object", additionalProperties: true },
  },
} as const;

const getLineageSchema = {
  description:
    "A tenant's crystals as a DAG, ordered by created_at then id, with its roots and heads",
  querystring: tenantQuerystring,
  headers: tenantHeaders,
  response: {
    200: {
      description:
        "`roots`: crystals without a parent; `heads`: crystals no other crystal names as " +
        "parent. An unknown tenant has an empty lineage",
      type: "object",
      required: ["tenant_hash", "count", "crystals", "roots", "heads"],
      properties: {
        tenant_hash: sha256Text,
        count: { type: "integer" },
        crystals: { type: "array", items: lineageEntrySchema },
        roots: { type: "array", items: sha256Text },
        heads: { type: "array", items: sha256Text },
      },
    },
    400: { ...errorResponseSchema, description: tenantErrors },
    ...commonErrorResponses,
  },
} as const;

export const crystalsInfoSchema = {
  type: "object",
  description: "memory crystals (service.md §6)",
  required: [
    "specification",
    "supported_ciphers",
    "max_crystal_size_bytes",
    "quota_bytes_per_tenant",
    "quota_bytes_per_key",
    "ttl_days",
    "isolation",
  ],
  properties: {
    specification: { type: "string" },
    supported_ciphers: { type: "array", items: { type: "string" } },
    max_crystal_size_bytes: {
      type: "integer",
      description: "decoded ciphertext bytes a crystal may hold",
    },
    quota_bytes_per_tenant: {
      type: "integer",
      description: "stored bytes (envelopes and summaries) one tenant may hold",
    },
    quota_bytes_per_key: {
      type: "integer",
      description: "stored bytes one principal (key, evaluation key, x402 payer) may hold",
    },
    ttl_days: {
      type: "integer",
      description:
        "whole days a crystal is kept after it was first stored (0: never); a crystal goes " +
        "only once no younger crystal descends from it, so lineages stay whole",
    },
    isolation: { type: "string" },
  },
} as const;

export const storeCrystalOperation = defineOperation({
  method: "POST",
  url: "/crystals",
  operationId: "storeCrystal",
  summary: "Store a sealed crystal",
  tag: "crystals",
  access: "leased",
  refusals: [
    "invalid_json",
    "bad_envelope",
    "missing_member",
    "unknown_member",
    "unsupported_spec",
    "unsupported_cipher",
    "invalid_crystal_id",
    "invalid_parent_crystal_id",
    "invalid_tenant_hash",
    "invalid_nonce",
    "invalid_ciphertext",
    "invalid_size_bytes",
    "size_mismatch",
    "invalid_created_at",
    "invalid_metadata_public",
    "metadata_too_large",
    "crystal_id_mismatch",
    "tenant_forbidden",
    "crystal_quota_exceeded",
    "crystal_conflict",
    "body_too_large",
    "ciphertext_too_large",
    "parent_not_found",
    "daily_cap_reached",
    "too_many_uploads",
  ],
  schema: postCrystalSchema,
});

export const getCrystalLineageOperation = defineOperation({
  method: "GET",
  url: "/crystals/lineage",
  operationId: "getCrystalLineage",
  summary: "Read a tenant's crystal lineage",
  tag: "crystals",
  access: "keyless",
  refusals: ["invalid_tenant_hash", "missing_tenant", "ambiguous_tenant"],
  schema: getLineageSchema,
});

export const getCrystalOperation = defineOperation({
  method: "GET",
  url: "/crystals/:crystal_id",
  operationId: "getCrystal",
  summary: "Read a crystal's envelope",
  tag: "crystals",
  access: "keyless",
  refusals: [
    "invalid_crystal_id",
    "invalid_tenant_hash",
    "missing_tenant",
    "ambiguous_tenant",
    "crystal_not_found",
  ],
  schema: getCrystalSchema,
});

/** `/info`'s `crystals` section (service.md §11). */
export function crystalsInfo(
  maxCiphertextBytes: number,
  quotas: { tenantBytes: number; principalBytes: number },
  ttlDays: number,
) {
  return {
    specification: CRYSTAL_SPEC,
    supported_ciphers: CRYSTAL_CIPHERS,
    max_crystal_size_bytes: maxCiphertextBytes,
    quota_bytes_per_tenant: quotas.tenantBytes,
    quota_bytes_per_key: quotas.principalBytes,
    ttl_days: ttlDays,
    isolation:
      "per tenant_hash: the first principal to write a tenant owns it and only it may write " +
      "there; reads need the tenant hash; another tenant's crystal and a missing one are the " +
      "same 404; no endpoint lists tenants",
  };
}

/** `/info`'s `crystals` section, from the service's limits. */
export const crystalsInfoSection: InfoSection<ReturnType<typeof crystalsInfo>> = (app) => {
  const { limits } = app.serviceConfig;
  return crystalsInfo(
    limits.maxCrystalCiphertextBytes,
    {
      tenantBytes: limits.crystalTenantQuotaBytes,
      principalBytes: limits.crystalPrincipalQuotaBytes,
    },
    limits.crystalTtlDays,
  );
};
