/**
 * The contract of the meta endpoints (service.md §11): `GET /health`, `GET /health/live`,
 * `GET /info` and `GET /openapi.json`. They have no worker.
 */
import { crystalsInfoSchema } from "../crystals/contract.js";
import { evaluationTermsSchema } from "../evaluation-keys/contract.js";
import { defineOperation } from "../operation.js";

export const dependency = { type: "string", enum: ["up", "down"] } as const;

const healthBody = {
  type: "object",
  required: ["ok"],
  properties: {
    ok: { type: "boolean" },
    redis: dependency,
    db: dependency,
    store: { type: "string", enum: ["low_space", "full"] },
  },
} as const;

const healthSchema = {
  description:
    "readiness and dependencies: {ok, redis?, db?, store?}; 503 when the document store is unreachable or its disk is full",
  response: { 200: healthBody, 503: healthBody },
} as const;

const liveSchema = {
  description: "liveness: 200 {ok: true} whenever the process answers, whatever its dependencies",
  response: {
    200: { type: "object", required: ["ok"], properties: { ok: { type: "boolean" } } },
  },
} as const;

const stringList = { type: "array", items: { type: "string" } } as const;

const looseObject = { type: "object", additionalProperties: true } as const;

const infoSchema = {
  description: "what this service is: versions, endpoints, receipt issuer, limits, privacy",
  response: {
    200: {
      type: "object",
      required: [
        "service",
        "implementation",
        "verifier_version",
        "spec_versions",
        "verdicts",
        "crypto",
        "endpoints",
        "issuer",
        "verification_receipt",
        "conformance",
        "crystals",
        "limits",
        "evaluation_keys",
        "privacy",
      ],
      properties: {
        service: { type: "string" },
        implementation: { type: "string" },
        verifier_version: { type: "string" },
        spec_versions: stringList,
        verdicts: stringList,
        crypto: {
          type: "object",
          required: ["ed25519"],
          properties: {
            ed25519: {
              type: "string",
              enum: ["libsodium", "openssl"],
              description:
                "the Ed25519 implementation in use: libsodium (OpenSSL 3.0's answers for " +
                "small-order and non-canonical points), or OpenSSL where sodium-native cannot " +
                "load; the answers are OpenSSL 3.0's either way",
            },
          },
        },
        endpoints: {
          type: "object",
          description: '"METHOD /path" → what it does',
          additionalProperties: { type: "string" },
        },
        issuer: {
          type: "string",
          description: "did:key of the service key (receipts, reports); service.md §8",
        },
        verification_receipt: {
          type: "object",
          properties: {
            kind: { type: "string" },
            version: { type: "integer" },
            requested_with: { type: "string" },
            digest_rule: { type: "string" },
            records: { type: "string" },
            consistency: { type: "string" },
            verify_offline: { type: "string" },
            issuer: { type: "string", description: "did:key of the current signing key" },
          },
        },
        conformance: looseObject,
        erc8004: {
          type: "object",
          description: "POST /erc8004/validate: its defaults, outcomes and signing address",
          properties: {
            endpoint: { type: "string" },
            chain_id_default: { type: "integer" },
            registry_default: { type: "string", description: "Validation Registry, EIP-55" },
            outcomes: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  outcome: { type: "integer" },
                  label: { type: "string" },
                  verdicts: stringList,
                },
              },
            },
            validator_address: {
              type: "string",
              description: "EIP-55 address of the secp256k1 key that signs attestations",
            },
          },
        },
        crystals: crystalsInfoSchema,
        notarization: {
          type: "object",
          description: "POST /notarize, GET /notarize/{digest}: what GET /notarize answers",
          additionalProperties: true,
        },
        limits: {
          type: "object",
          properties: {
            max_body_bytes: { type: "integer" },
            max_notarize_body_bytes: {
              type: "integer",
              description: "the body POST /notarize takes; above it 413 body_too_large",
            },
            max_anonymous_body_bytes: {
              type: "integer",
              description:
                "the body a request without a key, pass or payment may send (MCP discovery); " +
                "above it 413 body_too_large before the body is read",
            },
            max_crystal_uploads_per_key: {
              type: "integer",
              description:
                "POST /crystals bodies one key may send at once; more: 429 too_many_uploads",
            },
            anchor_quota_bytes_per_key: {
              type: "integer",
              description:
                "stored bytes one principal (API key, x402 payer) may have POST /anchors write: " +
                "each accepted submission is charged its document's size (the proof in base64 " +
                "and its attestations); more: 403 anchor_quota_exceeded",
            },
            anchor_quota_bytes_per_evaluation_key: {
              type: "integer",
              description: "the same for a self-served evaluation key",
            },
            max_batch: { type: "integer" },
            max_result_bytes: {
              type: "integer",
              description:
                "bytes of errors and reasons the verdicts of one request (POST /verify, one " +
                "POST /mcp body, POST /erc8004/validate) may hold, verify_anchor results of " +
                "one POST /mcp body included; above it 400 result_too_large",
            },
            cpu_task_deadline_ms: {
              type: "integer",
              description:
                "milliseconds one request's CPU work may take, waiting for a thread included; " +
                "past it the work is stopped and the answer is 503 work_limit_exceeded",
            },
            cost_units: {
              type: "object",
              description:
                "what a request is charged against its daily cap: units by its counted cost " +
                "(docs/cost-bounds.md); the RateLimit headers show the units charged",
              additionalProperties: true,
            },
            digest_cache: looseObject,
            anonymous: {
              type: "object",
              description:
                "keyless calls per UTC day: each client address's and each network's share, and " +
                "the cap behind all shares, whose last new_client_reserve calls only an " +
                "address's first new_client_calls calls of the day may take. /info, " +
                "/openapi.json, /health and the page's files are never counted",
              properties: {
                daily_cap: { type: "integer" },
                per_address_daily_cap: { type: "integer" },
                per_network_daily_cap: { type: "integer" },
                new_client_reserve: { type: "integer" },
                new_client_calls: { type: "integer" },
                address: { type: "string" },
                network: { type: "string" },
              },
            },
          },
        },
        evaluation_keys: evaluationTermsSchema,
        privacy: looseObject,
        payments: {
          description: "x402 terms, or null when payments are off",
          type: ["object", "null"],
          additionalProperties: true,
        },
      },
    },
  },
} as const;

const openApiSchema = {
  description: "this OpenAPI 3.1 document",
  response: { 200: { type: "object", additionalProperties: true } },
} as const;

export const healthOperation = defineOperation({
  method: "GET",
  url: "/health",
  operationId: "getHealth",
  summary: "Readiness and dependencies",
  tag: "meta",
  access: "keyless",
  refusals: [],
  schema: healthSchema,
});

export const livenessOperation = defineOperation({
  method: "GET",
  url: "/health/live",
  operationId: "getLiveness",
  summary: "Liveness",
  tag: "meta",
  access: "keyless",
  refusals: [],
  schema: liveSchema,
});

export const infoOperation = defineOperation({
  method: "GET",
  url: "/info",
  operationId: "getInfo",
  summary: "What this service is",
  tag: "meta",
  access: "keyless",
  refusals: [],
  schema: infoSchema,
});

export const openApiOperation = defineOperation({
  method: "GET",
  url: "/openapi.json",
  operationId: "getOpenApi",
  summary: "This OpenAPI document",
  tag: "meta",
  access: "keyless",
  refusals: [],
  schema: openApiSchema,
});
