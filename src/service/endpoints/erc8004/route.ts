/** `POST /erc8004/validate` (service.md §5): the body goes, unparsed, to a worker that answers it. */

import type { FastifyInstance } from "fastify";
import { ATTESTATION_DOMAIN_NAME, ATTESTATION_PRIMARY_TYPE } from "../../../erc8004/attestation.js";
import { BINDING_RULES } from "../../../erc8004/binding.js";
import { VERDICTS } from "../../../verifier/bundle/result.js";
import { sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { type Erc8004Task, validateBodySchema } from "./answer.js";
import { validateTask } from "./tasks.js";

const hex32 = { type: "string", pattern: "^0x[0-9a-f]{64}$" } as const;
const address = { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" } as const;

const checkNames = [
  "task_bound",
  "chain_intact",
  "signatures_valid",
  "termination_present",
  "caps_respected",
  "agreements_bound",
  "anchors_present",
] as const;

const attestationSchema = {
  type: "object",
  description:
    "an EIP-712 typed-data envelope: pass domain, types, primaryType and message to any " +
    "EIP-712 library (viem or ethers verifyTypedData) with signature to recover signer",
  required: ["domain", "types", "primaryType", "message", "digest", "signature", "signer"],
  properties: {
    domain: {
      type: "object",
      required: ["name", "version", "chainId", "verifyingContract"],
      properties: {
        name: { const: ATTESTATION_DOMAIN_NAME },
        version: { type: "string" },
        chainId: { type: "integer" },
        verifyingContract: { ...address, description: "the Validation Registry, EIP-55" },
      },
    },
    types: {
      type: "object",
      description:
        "ValidationResponse(bytes32 requestId,uint8 outcome,bytes32 receiptHash,uint256 timestamp)",
      additionalProperties: true,
    },
    primaryType: { const: ATTESTATION_PRIMARY_TYPE },
    message: {
      type: "object",
      required: ["requestId", "outcome", "receiptHash", "timestamp"],
      properties: {
        requestId: hex32,
        outcome: { enum: [0, 1, 2] },
        receiptHash: { ...hex32, description: "0x + SHA-256 of the JCS bytes of the bundle" },
        timestamp: { type: "integer", description: "Unix seconds at signing" },
      },
    },
    digest: { ...hex32, description: "the EIP-712 hash that was signed" },
    signature: {
      type: "string",
      pattern: "^0x[0-9a-f]{130}$",
      description: "65 bytes: r, s, v (27 or 28)",
    },
    signer: { ...address, description: "the validator address (EIP-55), as at /info" },
  },
} as const;

const evaluationProperties = {
  request_id: hex32,
  outcome: { enum: [0, 1, 2], description: "1 ACCEPT, 0 REJECT, 2 NEEDS_EVIDENCE" },
  outcome_label: { enum: ["ACCEPT", "REJECT", "NEEDS_EVIDENCE"] },
  verdict: { enum: VERDICTS },
  checks: {
    type: "object",
    description: "booleans read off the verification (docs/service-decisions.md)",
    required: checkNames,
    properties: Object.fromEntries(checkNames.map((name) => [name, { type: "boolean" }])),
  },
  binding: {
    enum: [...BINDING_RULES, null],
    description: "the rule under which task_hash names the bundle's task; null when none does",
  },
  verification: {
    type: "object",
    description: "the verdict payload, exactly as POST /verify answers for this bundle",
    additionalProperties: true,
  },
  validator_address: address,
  service: { type: "string" },
} as const;

const validateSchema = {
  description:
    "validates a bundle for an ERC-8004 validation request: verifies it, binds the request's " +
    "task_hash to it, and signs the outcome as an EIP-712 ValidationResponse",
  body: validateBodySchema,
  response: {
    200: {
      description: "the evaluation and its signed attestation",
      type: "object",
      required: [
        "request_id",
        "outcome",
        "outcome_label",
        "verdict",
        "checks",
        "verification",
        "attestation",
        "validator_address",
        "service",
      ],
      properties: { ...evaluationProperties, attestation: attestationSchema },
    },
    400: {
      ...errorResponseSchema,
      description:
        "invalid_json, bad_shape (not an object, unknown member), missing_<member>, " +
        "bad_<member>, bad_registry_checksum, result_too_large (the verdict's errors and " +
        "reasons would pass `max_result_bytes`, GET /info; `limit`)",
    },
    422: {
      type: "object",
      description:
        "task_hash_unbound: the whole evaluation with attestation null (nothing is signed); " +
        "bundle_not_canonicalizable: the bundle has no JCS bytes (a float, a lone surrogate)",
      required: ["error"],
      properties: {
        error: { enum: ["task_hash_unbound", "bundle_not_canonicalizable"] },
        detail: { type: "string" },
        ...evaluationProperties,
        attestation: { type: "null" },
      },
    },
    ...commonErrorResponses,
  },
} as const;

export async function erc8004Routes(app: FastifyInstance) {
  app.post(
    "/erc8004/validate",
    { schema: validateSchema, config: { access: "leased" } },
    async (request, reply) => {
      const body = transferableBody(request.body);
      const task: Erc8004Task = { body };
      return sendAnswer(
        reply,
        await app.cpuPool.run(validateTask, task, [body], { clientGone: clientGone(reply) }),
      );
    },
  );
}
