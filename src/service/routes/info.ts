/**
 * `GET /info` (service.md §11): what the service is, which specs and verdicts it knows, its
 * limits, and the did:key that signs its verification receipts. The sections for the
 * services not built yet (conformance, ERC-8004, crystals, payments) come with them.
 */
import type { FastifyInstance } from "fastify";
import { SUPPORTED_SPECS } from "../../verifier/bundle/record-types.js";
import { VERDICTS } from "../../verifier/bundle/result.js";
import { DEFAULT_IMPLEMENTATION } from "../../verifier/verification-receipt/index.js";
import { VERIFIER_VERSION } from "../../verifier/version.js";
import { SERVICE_NAME } from "../verify-request.js";

const stringList = { type: "array", items: { type: "string" } } as const;

const infoSchema = {
  response: {
    200: {
      type: "object",
      required: [
        "service",
        "implementation",
        "verifier_version",
        "spec_versions",
        "verdicts",
        "issuer",
        "limits",
      ],
      properties: {
        service: { type: "string" },
        implementation: { type: "string" },
        verifier_version: { type: "string" },
        spec_versions: stringList,
        verdicts: stringList,
        issuer: { type: "string", description: "did:key of the verification receipt signer" },
        limits: {
          type: "object",
          required: ["max_body_bytes", "max_batch"],
          properties: {
            max_body_bytes: { type: "integer" },
            max_batch: { type: "integer" },
          },
        },
      },
    },
  },
} as const;

export async function infoRoutes(app: FastifyInstance) {
  const info = () => ({
    service: SERVICE_NAME,
    implementation: DEFAULT_IMPLEMENTATION,
    verifier_version: VERIFIER_VERSION,
    spec_versions: SUPPORTED_SPECS,
    verdicts: VERDICTS,
    issuer: app.serviceIdentity.signer().did,
    limits: {
      max_body_bytes: app.serviceConfig.limits.maxBodyBytes,
      max_batch: app.serviceConfig.limits.maxBatch,
    },
  });
  app.get("/info", { schema: infoSchema, config: { access: "keyless" } }, async () => info());
}
