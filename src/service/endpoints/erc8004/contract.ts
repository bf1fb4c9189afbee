/**
 * The contract of `POST /erc8004/validate` (service.md §5): its operation, schemas and worker
 * task. The route and `worker.ts` share it.
 */
import { ATTESTATION_DOMAIN_NAME, ATTESTATION_PRIMARY_TYPE } from "../../../erc8004/attestation.js";
import { BINDING_RULES } from "../../../erc8004/binding.js";
import {
  DEFAULT_CHAIN_ID,
  DEFAULT_VALIDATION_REGISTRY,
  MAX_CHAIN_ID,
} from "../../../erc8004/registry.js";
import { VERDICTS } from "../../../verifier/bundle/result.js";
import type { Answer } from "../../errors.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";
import type { Erc8004Task } from "./answer.js";

export const validateTask = defineTask<Erc8004Task, Promise<Answer>>(import.meta.url);

export const memberSchemas = {
  request_id: {
    type: "string",
    pattern: "^0x[0-9a-fA-F]{64}$",
    description: "the ERC-8004 request hash being answered: bytes32 as 0x + 64 hex digits",
  },
  task_hash: {
    type: "string",
    pattern: "^(0x|sha256:)[0-9a-fA-F]{64}$",
    description:
      "32 bytes as 0x<64 hex> or sha256:<64 hex>; must equal SHA-256 or keccak-256 of the " +
      "bundle's task_id, a delivery.attestation response_hash, or the terminal receipt's digest",
  },
  bundle: { type: "object", description: "the Continuity Receipt bundle to validate" },
  registry_address: {
    type: "string",
    pattern: "^0x[0-9a-fA-F]{40}$",
    default: DEFAULT_VALIDATION_REGISTRY,
    description:
      "the Validation Registry (the EIP-712 verifyingContract); mixed case must be a valid " +
      "EIP-55 checksum",
  },
  chain_id: {
    type: "integer",
    minimum: 1,
    maximum: MAX_CHAIN_ID,
    default: DEFAULT_CHAIN_ID,
    description: "the EIP-712 domain's chainId (EIP-155)",
  },
} as const;

/** The route's body schema: the OpenAPI document shows it, the worker checks against it. */
const validateBodySchema = {
  type: "object",
  description:
    "an ERC-8004 validation request. Parsed strictly: UTF-8, no duplicate members, no " +
    "trailing data; unknown members are refused",
  required: ["request_id", "task_hash", "bundle"],
  additionalProperties: false,
  properties: memberSchemas,
} as const;

const hex32 = { type: "string", pattern: "^0x[0-9a-f]{64}$" } as const;

export const address = { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" } as const;

const checkNames = [
  "task_bound",
  "chain_intact",
  "signatures_valid",
  "termination_present",
  "caps_respected",
  "agreements_bound",
  "anchors_present",
] as const;

export const attestationSchema = {
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

export const validateErc8004Operation = defineOperation({
  method: "POST",
  url: "/erc8004/validate",
  operationId: "validateErc8004",
  summary: "Validate a bundle for an ERC-8004 request",
  tag: "erc8004",
  access: "leased",
  refusals: [
    "invalid_json",
    "bad_shape",
    "result_too_large",
    "bad_registry_checksum",
    "bundle_not_canonicalizable",
    "task_hash_unbound",
    "cost_exceeds_limit",
    "cost_exceeds_cap",
  ],
  schema: validateSchema,
});
