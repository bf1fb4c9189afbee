/**
 * `GET /info` (service.md §11): what the service is, which specs and verdicts it knows, its
 * endpoints, the did:key that signs its receipts and reports, its limits and what it keeps.
 * The endpoint list is read from the OpenAPI document, which is generated from the route
 * schemas, so it cannot list a route that does not exist or miss one that does. Sections for
 * services follow from the configuration (payments are null while `X402_PAY_TO` is unset).
 * Endpoints publish their own sections through their contracts (`InfoSection`), so this
 * module reads no route or answer module of another endpoint.
 */
import type { FastifyInstance } from "fastify";
import { NEW_CLIENT_CALLS, newClientReserve } from "../../../access/anonymous-cap.js";
import { loadCorpusSummary } from "../../../conformance/corpus.js";
import { OUTCOME_TABLE } from "../../../erc8004/outcome.js";
import { DEFAULT_CHAIN_ID, DEFAULT_VALIDATION_REGISTRY } from "../../../erc8004/registry.js";
import type { OfferKind, PaymentSettings } from "../../../payments/requirements.js";
import { SUPPORTED_SPECS } from "../../../verifier/bundle/record-types.js";
import { VERDICTS } from "../../../verifier/bundle/result.js";
import { verifierCrypto } from "../../../verifier/crypto/provider.js";
import {
  DEFAULT_IMPLEMENTATION,
  VERIFICATION_RECEIPT_KIND,
} from "../../../verifier/verification-receipt/index.js";
import { VERIFIER_VERSION } from "../../../verifier/version.js";
import { costUnitsInfo } from "../../cost.js";
import { SERVICE_NAME } from "../../service-name.js";
import { crystalsInfoSection } from "../crystals/contract.js";
import { evaluationKeysInfoSection } from "../evaluation-keys/contract.js";
import { NOTARIZE_BODY_LIMIT_BYTES, notarizationInfoSection } from "../notarize/contract.js";
import { route } from "../operation.js";
import { infoOperation } from "./contract.js";

/** USD text of an atomic amount of a USD stablecoin: 10000 (6 decimals) → "0.01". */
function usd(atomic: bigint, decimals: number): string {
  const text = atomic.toString().padStart(decimals + 1, "0");
  const whole = text.slice(0, -decimals);
  const fraction = text.slice(-decimals).replace(/0+$/, "").padEnd(2, "0");
  return `${whole}.${fraction}`;
}

function paymentsInfo(settings: PaymentSettings | null) {
  if (settings === null) return null;
  const price = (kind: OfferKind) => ({
    usd: usd(settings.prices[kind], settings.decimals),
    atomic: settings.prices[kind].toString(),
  });
  return {
    x402_versions: [1, 2],
    scheme: "exact",
    network: settings.network.caip2,
    asset: settings.asset,
    pay_to: settings.payTo,
    prices: {
      per_call: price("call"),
      lease: { ...price("lease"), seconds: settings.leaseSeconds },
      day_pass: { ...price("day"), seconds: settings.dayPassSeconds },
    },
    pass_routes: ["POST /erc8004/validate", "POST /crystals"],
    pass_token_header: "X-Pass-Token",
  };
}

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

export async function infoRoutes(app: FastifyInstance) {
  // The deployed conformance corpus, or null (then `/conformance` answers 503).
  const { corpusDir } = app.serviceConfig;
  const corpus = corpusDir === null ? null : await loadCorpusSummary(corpusDir);
  const { limits } = app.serviceConfig;
  let endpoints: Record<string, string> | undefined;
  const info = async () => {
    endpoints ??= endpointsOf(app.swagger() as OpenApiDocument);
    const issuer = app.serviceIdentity.signer().did;
    return {
      service: SERVICE_NAME,
      implementation: DEFAULT_IMPLEMENTATION,
      verifier_version: VERIFIER_VERSION,
      spec_versions: SUPPORTED_SPECS,
      verdicts: VERDICTS,
      crypto: { ed25519: verifierCrypto().id },
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
        corpus,
      },
      erc8004: {
        endpoint: "POST /erc8004/validate",
        chain_id_default: DEFAULT_CHAIN_ID,
        registry_default: DEFAULT_VALIDATION_REGISTRY,
        outcomes: OUTCOME_TABLE,
        validator_address: app.validatorAddress,
      },
      crystals: await crystalsInfoSection(app),
      notarization: await notarizationInfoSection(app),
      limits: {
        max_body_bytes: limits.maxBodyBytes,
        max_notarize_body_bytes: NOTARIZE_BODY_LIMIT_BYTES,
        max_anonymous_body_bytes: limits.maxAnonymousBodyBytes,
        max_crystal_uploads_per_key: limits.maxCrystalUploadsPerKey,
        anchor_quota_bytes_per_key: limits.anchorPrincipalQuotaBytes,
        anchor_quota_bytes_per_evaluation_key: limits.anchorEvaluationQuotaBytes,
        max_batch: limits.maxBatch,
        max_result_bytes: limits.maxResultBytes,
        cpu_task_deadline_ms: app.serviceConfig.cpuPool.taskDeadlineMs,
        cost_units: costUnitsInfo(),
        digest_cache: {
          opt_in: "?cache=1",
          ttl_s: limits.digestCacheTtlSeconds,
          max_entries: limits.digestCacheMaxEntries,
          stores: "verdict payloads only, in memory (Redis when distributed); never on disk",
        },
        anonymous: {
          daily_cap: limits.anonymousDailyCap,
          per_address_daily_cap: limits.anonymousAddressDailyCap,
          per_network_daily_cap: limits.anonymousNetworkDailyCap,
          new_client_reserve: newClientReserve({
            dailyCap: limits.anonymousDailyCap,
            newClientReservePercent: limits.anonymousNewClientReservePercent,
          }),
          new_client_calls: NEW_CLIENT_CALLS,
          address: "an IPv4 address or an IPv6 /64, as seen through TRUST_PROXY",
          network: "an IPv4 /24 or an IPv6 /48 of that address",
        },
      },
      payments: paymentsInfo(app.serviceConfig.payments.settings),
      evaluation_keys: await evaluationKeysInfoSection(app),
      privacy: {
        request_bodies:
          "never logged or stored, except documents you ask to host (anchors) and the " +
          "statements POST /notarize signs",
        // The document store's collections (files in embedded mode, PostgreSQL when
        // distributed), so a reader knows what a deployment keeps.
        persistent_data: {
          anchors: "hosted OpenTimestamps proofs and each principal's proof bytes",
          notarizations: "signed wm.context-notarization statements, under their digest",
          revocations: "issuers' revocation documents",
          settlements: "x402 settlement receipts",
          crystals: "sealed crystals (ciphertext only) and their tenants' usage",
          keys: "API keys (hashes) and their usage",
        },
        logs: "request id, method, route template, status, latency; no query strings or IPs",
        digest_cache: "opt-in per request; without ?cache=1 nothing about a request is kept",
        client_addresses:
          "never logged or stored; keyless calls and evaluation keys count against keyed " +
          "hashes of the address (IPv6: of its /64) and, for evaluation keys, of its /24 " +
          "(IPv6: /48), dropped once the UTC day is over",
      },
    };
  };
  route(app, infoOperation, { handler: async () => info() });
}
