/**
 * `GET /info` (service.md §11): what the service is, which specs and verdicts it knows, its
 * endpoints, the did:key that signs its receipts and reports, its limits and what it keeps.
 * The endpoint list is read from the OpenAPI document, which is generated from the route
 * schemas, so it cannot list a route that does not exist or miss one that does. Sections for
 * services not built yet (ERC-8004, crystals, payments) arrive with them.
 */
import type { FastifyInstance } from "fastify";
import type { CorpusSummary } from "../../conformance/corpus.js";
import { SUPPORTED_SPECS } from "../../verifier/bundle/record-types.js";
import { VERDICTS } from "../../verifier/bundle/result.js";
import {
  DEFAULT_IMPLEMENTATION,
  VERIFICATION_RECEIPT_KIND,
} from "../../verifier/verification-receipt/index.js";
import { VERIFIER_VERSION } from "../../verifier/version.js";
import { SERVICE_NAME } from "../verify-request.js";

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
        "endpoints",
        "issuer",
        "verification_receipt",
        "conformance",
        "limits",
        "privacy",
      ],
      properties: {
        service: { type: "string" },
        implementation: { type: "string" },
        verifier_version: { type: "string" },
        spec_versions: stringList,
        verdicts: stringList,
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
        limits: {
          type: "object",
          properties: {
            max_body_bytes: { type: "integer" },
            max_batch: { type: "integer" },
            digest_cache: looseObject,
          },
        },
        privacy: looseObject,
      },
    },
  },
} as const;

interface OpenApiDocument {
  paths?: Record<string, Record<string, { description?: string }>>;
}

const HTTP_METHODS = new Set(["get", "post", "put", "patch", "delete"]);

/**
 * `"POST /verify": description` for every documented operation, in registration order. CORS
 * preflights (OPTIONS) are left out: they are not something a client calls for itself.
 */
function endpointsOf(document: OpenApiDocument): Record<string, string> {
  const endpoints: Record<string, string> = {};
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!HTTP_METHODS.has(method)) continue;
      endpoints[`${method.toUpperCase()} ${path}`] = operation.description ?? "";
    }
  }
  return endpoints;
}

export interface InfoRoutesOptions {
  /** The deployed conformance corpus, or null (then `/conformance` answers 503). */
  corpus: CorpusSummary | null;
}

export async function infoRoutes(app: FastifyInstance, options: InfoRoutesOptions) {
  const { limits } = app.serviceConfig;
  let endpoints: Record<string, string> | undefined;
  const info = () => {
    endpoints ??= endpointsOf(app.swagger() as OpenApiDocument);
    const issuer = app.serviceIdentity.signer().did;
    return {
      service: SERVICE_NAME,
      implementation: DEFAULT_IMPLEMENTATION,
      verifier_version: VERIFIER_VERSION,
      spec_versions: SUPPORTED_SPECS,
      verdicts: VERDICTS,
      endpoints,
      issuer,
      verification_receipt: {
        kind: VERIFICATION_RECEIPT_KIND,
        version: 1,
        requested_with: "POST /verify?receipt=1",
        digest_rule: "bundle_digest = sha256 of the JCS (RFC 8785) bytes of the bundle object",
        records: "verdict, error codes and entries, reasons, summary, verified_at, verifier",
        consistency: "verdict and error_codes are checked against the lists they summarise",
        verify_offline:
          "Ed25519 over JCS of the receipt minus sig, under the did:key in issuer; or POST /verify-receipt",
        issuer,
      },
      conformance: {
        endpoint: "POST /conformance",
        kind: "continuity-receipt-conformance",
        version: 1,
        verdicts: ["CONFORMANT", "PARTIAL", "NONCONFORMANT"],
        submission:
          '{"implementation":{"name",...},"results":{"bundles","verification_receipts","hostile_inputs"}}',
        corpus: options.corpus,
      },
      limits: {
        max_body_bytes: limits.maxBodyBytes,
        max_batch: limits.maxBatch,
        digest_cache: {
          opt_in: "?cache=1",
          ttl_s: limits.digestCacheTtlSeconds,
          max_entries: limits.digestCacheMaxEntries,
          stores: "verdict payloads only, in memory (Redis when distributed); never on disk",
        },
      },
      privacy: {
        request_bodies: "never logged or stored, except documents you ask to host (anchors)",
        logs: "request id, method, route template, status, latency; no query strings or IPs",
        digest_cache: "opt-in per request; without ?cache=1 nothing about a request is kept",
      },
    };
  };
  app.get("/info", { schema: infoSchema, config: { access: "keyless" } }, async () => info());
}
