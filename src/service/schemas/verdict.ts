/**
 * The verdict payload (verifier.md §5; service.md §1): what `POST /verify` answers for one
 * bundle and, the same object, what the MCP tool `verify_bundle` returns as structured
 * content. Members the payload may gain later (as `cache` with `?cache=1`) are allowed.
 */
import { VERDICTS } from "../../verifier/bundle/result.js";

const reasonsSchema = { type: "array", items: { type: "string" } } as const;

/** One bundle's verdict, as a batch lists it (no `service`). */
export const verdictSchema = {
  type: "object",
  description: "the verification result, members in the reference's order",
  required: ["verdict", "errors", "provisional_reasons", "insufficient_reasons", "summary"],
  properties: {
    verdict: { enum: VERDICTS },
    errors: {
      type: "array",
      description: "in the order the checks ran",
      items: {
        type: "object",
        required: ["code", "detail", "receipt_id"],
        properties: {
          code: { type: "string" },
          detail: { type: "string" },
          receipt_id: { description: "the receipt's raw `receipt_id` (any JSON value), or null" },
        },
      },
    },
    provisional_reasons: reasonsSchema,
    insufficient_reasons: reasonsSchema,
    summary: { type: "object", description: "what the checks found, in the order they ran" },
    verification_receipt: {
      type: "object",
      description: "with ?receipt=1: signed by the service (verifier.md §6.1)",
    },
    verification_receipt_error: {
      type: "string",
      description: "with ?receipt=1, when no receipt could be issued",
    },
  },
} as const;

/** The answer for a single bundle: its verdict plus `service`. */
export const verdictPayloadSchema = {
  ...verdictSchema,
  description: "a bundle's verdict payload plus `service`",
  required: [...verdictSchema.required, "service"],
  properties: {
    ...verdictSchema.properties,
    cache: {
      type: "object",
      description: "with ?cache=1: {hit, cached_at, age_s?}",
    },
    service: { type: "string" },
  },
} as const;

/** The answer for a batch: every verdict in order, their count and `service`. */
export const verdictBatchSchema = {
  type: "object",
  description: "a batch's verdicts, in the order of `bundles`",
  required: ["results", "count", "service"],
  properties: {
    results: { type: "array", items: verdictSchema },
    count: { type: "integer" },
    service: { type: "string" },
  },
} as const;
