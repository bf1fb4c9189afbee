/**
 * The contract of `POST /verify-receipt` (service.md §1): its operation, schemas and worker
 * task. The route and `worker.ts` share it.
 */
import { VERIFICATION_RECEIPT_KIND } from "../../../verifier/verification-receipt/verify.js";
import type { Answer } from "../../errors.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";
import type { VerifyReceiptTask } from "./answer.js";

export const verifyReceiptTask = defineTask<VerifyReceiptTask, Answer>(import.meta.url);

const receiptSchema = {
  type: "object",
  description:
    "a verification receipt (verifier.md §6.1), checked as it is: a malformed receipt is a " +
    "`200` with `valid: false`, not a refused request",
  required: ["kind"],
  properties: {
    kind: { const: VERIFICATION_RECEIPT_KIND },
    version: { const: 1 },
    bundle_digest: { type: "string" },
    verdict: { type: "string" },
    verified_at: { type: "string" },
    issuer: { type: "string" },
    sig: { type: "object" },
  },
} as const;

/** The wrapped form; the worker validates a wrapped body against this schema. */
export const receiptRequestSchema = {
  type: "object",
  description: "a receipt with what to check it against; recognised by having no `kind` member",
  required: ["receipt"],
  additionalProperties: false,
  properties: {
    receipt: { description: "the verification receipt" },
    bundle_bytes_b64: {
      type: "string",
      description:
        "the bundle's JSON bytes in standard padded base64; checks that the receipt's " +
        "bundle_digest is the digest of this bundle",
    },
    bundle: { type: "object", description: "the bundle, as an alternative to bundle_bytes_b64" },
    revocations: {
      type: ["array", "object"],
      description:
        "what to check the issuer key against (verifier.md §7): a list of revocation " +
        "statements, one revocation document (`{kind: continuity-receipt-revocations, " +
        "version: 1, statements}`, as `GET /revocations/{issuer}` serves it), or a list of " +
        "documents, merged as the CLI merges repeated `--revocations`. Not both statements " +
        "and documents in one list",
    },
  },
} as const;

export const verifyReceiptBodySchema = {
  description: "a verification receipt, or a receipt wrapped with a bundle and revocations",
  anyOf: [receiptSchema, receiptRequestSchema],
} as const;

export const verifyReceiptSchema = {
  description:
    "checks a verification receipt (verifier.md §6.2): its shape, its signature by its issuer, " +
    "optionally that it describes a given bundle and that its issuer key was not revoked",
  body: verifyReceiptBodySchema,
  response: {
    200: {
      description:
        "the ReceiptCheck; `issuer`, `verdict`, `verified_at` and `bundle_digest` are echoed " +
        "from the receipt as they are (null when absent)",
      type: "object",
      required: [
        "valid",
        "errors",
        "issuer",
        "verdict",
        "verified_at",
        "bundle_digest",
        "digest_match",
        "service",
      ],
      properties: {
        valid: { type: "boolean" },
        errors: { type: "array", items: { type: "string" }, description: "in check order" },
        issuer: {},
        verdict: {},
        verified_at: {},
        bundle_digest: {},
        digest_match: {
          type: ["boolean", "null"],
          description: "null when no bundle was given",
        },
        service: { type: "string" },
      },
    },
    400: errorResponseSchema,
    ...commonErrorResponses,
  },
} as const;

export const verifyReceiptOperation = defineOperation({
  method: "POST",
  url: "/verify-receipt",
  operationId: "verifyReceipt",
  summary: "Check a verification receipt",
  tag: "verification",
  access: "keyed",
  refusals: [],
  schema: verifyReceiptSchema,
});
