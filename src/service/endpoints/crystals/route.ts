/**
 * Memory crystals (service.md §6): `POST /crystals` stores a sealed envelope for a tenant,
 * `GET /crystals/{crystal_id}` serves it back to whoever names its tenant, and
 * `GET /crystals/lineage` lists a tenant's crystals as a DAG. Bodies are checked on a worker
 * (`answer.ts`); storage and tenant ownership are src/crystals/store.ts.
 *
 * Reads never reveal more than the tenant hash they were given unlocks: a crystal of another
 * tenant and a crystal that does not exist are the same 404, and an unknown tenant has an
 * empty lineage. No route lists tenants.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  CRYSTAL_CIPHERS,
  CRYSTAL_SPEC,
  ENVELOPE_MEMBERS,
  RFC3339_PATTERN,
} from "../../../crystals/envelope.js";
import {
  type PreparedCrystal,
  readCrystal,
  readLineageSummaries,
  type StoreOutcome,
  storeCrystal,
} from "../../../crystals/store.js";
import { DocumentStoreUnavailableError } from "../../../storage/document-store.js";
import { type Answer, errorAnswer, sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { type CrystalLineageTask, type CrystalPostTask, crystalEnvelopeSchema } from "./answer.js";
import { lineageTask, prepareCrystalTask } from "./tasks.js";

const TENANT_HEADER = "x-tenant-hash";
/** Crystals are one tenant's state: no shared cache may keep them. */
const PRIVATE_NO_STORE = "private, no-store";
/** Reads accept hex of either case and look it up in lower case, the only case stored. */
const SHA256_ID_ANY_CASE = /^sha256:[0-9a-fA-F]{64}$/;
const SHA256_ID_ANY_CASE_PATTERN = "^sha256:[0-9a-fA-F]{64}$";

const STORE_UNAVAILABLE_DETAIL = "the crystal store cannot be reached right now, retry";

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

const tenantErrors =
  "missing_tenant, invalid_tenant_hash, ambiguous_tenant (header and query differ)";

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

interface TenantQuery {
  tenant?: unknown;
}

/** A read parameter as the lower-case id it names, or null when it is not an id. */
function readId(value: unknown): string | null {
  return typeof value === "string" && SHA256_ID_ANY_CASE.test(value) ? value.toLowerCase() : null;
}

/** The tenant a read names, from `X-Tenant-Hash` or `?tenant=`; both must agree. */
function requestedTenant(request: FastifyRequest<{ Querystring: TenantQuery }>): string | Answer {
  const header = request.headers[TENANT_HEADER];
  const query = request.query.tenant;
  if (header === undefined && query === undefined) {
    return errorAnswer("missing_tenant", {
      detail: "name the tenant: X-Tenant-Hash or ?tenant=",
    });
  }
  const fromHeader = header === undefined ? undefined : readId(header);
  const fromQuery = query === undefined ? undefined : readId(query);
  if (fromHeader === null || fromQuery === null) {
    return errorAnswer("invalid_tenant_hash", {
      detail: "the tenant must be sha256: and 64 hex digits",
    });
  }
  if (fromHeader !== undefined && fromQuery !== undefined && fromHeader !== fromQuery) {
    return errorAnswer("ambiguous_tenant", {
      detail: "X-Tenant-Hash and ?tenant= name different tenants",
    });
  }
  return (fromHeader ?? fromQuery) as string;
}

/** Nothing was half-written (every store write is one atomic statement): retrying is safe. */
function storeUnavailable(reply: FastifyReply): FastifyReply {
  return sendAnswer(
    reply.header("retry-after", "1"),
    errorAnswer("crystal_store_unavailable", { detail: STORE_UNAVAILABLE_DETAIL }),
  );
}

export async function crystalRoutes(app: FastifyInstance) {
  const { limits } = app.serviceConfig;

  app.post(
    "/crystals",
    {
      schema: postCrystalSchema,
      bodyLimit: limits.maxCrystalBodyBytes,
      config: { access: "leased", uploadsPerKey: true, idempotent: true },
    },
    async (request, reply) => {
      const body = transferableBody(request.body);
      const task: CrystalPostTask = {
        kind: "post",
        body,
        maxCiphertextBytes: limits.maxCrystalCiphertextBytes,
      };
      const answer = await app.cpuPool.run(prepareCrystalTask, task, [body], {
        clientGone: clientGone(reply),
      });
      if (answer.kind === "reply") return sendAnswer(reply, answer);
      const crystal: PreparedCrystal = answer;
      let outcome: StoreOutcome;
      try {
        outcome = await storeCrystal(app.documentStore, request.principal, crystal, {
          tenantBytes: limits.crystalTenantQuotaBytes,
          principalBytes: limits.crystalPrincipalQuotaBytes,
        });
      } catch (error) {
        if (!(error instanceof DocumentStoreUnavailableError)) throw error;
        return storeUnavailable(reply);
      }
      if (typeof outcome === "object") {
        const { quotaExceeded, quotaBytes, usedBytes } = outcome;
        const whose = quotaExceeded === "tenant" ? "this tenant" : "this principal";
        return sendAnswer(
          reply,
          errorAnswer("crystal_quota_exceeded", {
            detail: `${whose} holds ${usedBytes} bytes of crystals; the quota is ${quotaBytes} (${quotaExceeded === "tenant" ? "CRYSTAL_TENANT_QUOTA_BYTES" : "CRYSTAL_KEY_QUOTA_BYTES"})`,
          }),
        );
      }
      if (outcome !== "created" && outcome !== "unchanged") {
        return sendAnswer(reply, errorAnswer(outcome));
      }
      const stored = {
        stored: true,
        crystal_id: crystal.crystalId,
        parent_crystal_id: crystal.parentCrystalId,
        tenant_hash: crystal.tenantHash,
        size_bytes: crystal.sizeBytes,
      };
      if (outcome === "unchanged") return reply.code(200).send(stored);
      return reply
        .code(201)
        .header("location", `/crystals/${crystal.crystalId}?tenant=${crystal.tenantHash}`)
        .send(stored);
    },
  );

  // A static path: the router prefers it to `/crystals/:crystal_id`, so it is never read as an id.
  app.get<{ Querystring: TenantQuery }>(
    "/crystals/lineage",
    { schema: getLineageSchema, attachValidation: true, config: { access: "keyless" } },
    async (request, reply) => {
      reply.header("cache-control", PRIVATE_NO_STORE);
      const tenantHash = requestedTenant(request);
      if (typeof tenantHash !== "string") return sendAnswer(reply, tenantHash);
      let summaries: Uint8Array[];
      try {
        summaries = await readLineageSummaries(app.documentStore, tenantHash);
      } catch (error) {
        if (!(error instanceof DocumentStoreUnavailableError)) throw error;
        return storeUnavailable(reply);
      }
      const task: CrystalLineageTask = { kind: "lineage", tenantHash, summaries };
      const json = await app.cpuPool.run(lineageTask, task, [], { clientGone: clientGone(reply) });
      return sendAnswer(reply, { statusCode: 200, json });
    },
  );

  app.get<{ Params: { crystal_id: string }; Querystring: TenantQuery }>(
    "/crystals/:crystal_id",
    { schema: getCrystalSchema, attachValidation: true, config: { access: "keyless" } },
    async (request, reply) => {
      reply.header("cache-control", PRIVATE_NO_STORE);
      const crystalId = readId(request.params.crystal_id);
      if (crystalId === null) {
        const detail = "crystal_id must be sha256: and 64 hex digits";
        return sendAnswer(reply, errorAnswer("invalid_crystal_id", { detail }));
      }
      const tenantHash = requestedTenant(request);
      if (typeof tenantHash !== "string") return sendAnswer(reply, tenantHash);
      let envelope: Uint8Array | null;
      try {
        envelope = await readCrystal(app.documentStore, tenantHash, crystalId);
      } catch (error) {
        if (!(error instanceof DocumentStoreUnavailableError)) throw error;
        return storeUnavailable(reply);
      }
      // One answer for "not in this tenant" and "nowhere": no existence oracle across tenants.
      if (envelope === null) return sendAnswer(reply, errorAnswer("crystal_not_found"));
      return sendStoredDocument(request, reply, envelope, {
        cacheControl: PRIVATE_NO_STORE,
        etag: `"${crystalId}"`,
      });
    },
  );
}

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
