/**
 * The contract of `POST /verify` (service.md §1): its operation and its worker task. The route
 * and `worker.ts` share it.
 */
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { verdictBatchSchema, verdictPayloadSchema } from "../../schemas/verdict.js";
import { defineTask } from "../../tasks/define-task.js";
import type { VerifyOutcome, VerifyTask } from "../../verification/outcome.js";
import { defineOperation } from "../operation.js";

export const verifyTask = defineTask<VerifyTask, VerifyOutcome>(import.meta.url, "default", {
  batchable: true,
});

const flagSchema = (description: string) => ({
  description: `${description}; enabled by \`1\` or \`true\`, anything else disables it`,
});

/**
 * The 400 answers, naming the configured result budget so that `/openapi.json` states the
 * limit a deployment applies (as `/info` does).
 */
function refusalsSchema(maxResultBytes: number) {
  return {
    ...errorResponseSchema,
    description:
      "`invalid_json`, `bad_shape`, `batch_too_large` (`limit`: bundles per batch), or " +
      "`result_too_large`: the errors and reasons of the request's verdicts would take more " +
      `than ${maxResultBytes} bytes of the answer (\`limit\`; \`max_result_bytes\` in ` +
      "GET /info); verification stops there",
  };
}

export const verifyOperation = defineOperation({
  method: "POST",
  url: "/verify",
  operationId: "verify",
  summary: "Verify a bundle or a batch",
  tag: "verification",
  access: "keyed",
  refusals: [
    "invalid_json",
    "bad_shape",
    "batch_too_large",
    "result_too_large",
    "cost_exceeds_limit",
    "cost_exceeds_cap",
  ],
  schema: (config) => ({
    description:
      "verify a bundle, {bundle}, or a batch {bundles: [...]} of at most 50; verdicts are 200s",
    body: {
      description:
        "a bundle object; or {bundle: <bundle>}; or {bundles: [<bundle>, …]} (a batch, ≤ 50 items). " +
        "Parsed strictly: UTF-8, no duplicate members, no trailing data",
      type: "object",
      properties: {
        bundle: { type: "object", description: "form 2: the bundle to verify" },
        bundles: { type: "array", description: "form 3: a batch, verified in order" },
      },
    },
    querystring: {
      type: "object",
      properties: {
        require_anchor: flagSchema("missing anchors make the verdict PROVISIONAL"),
        receipt: flagSchema("add a signed verification receipt to each result"),
        cache: flagSchema(
          "opt-in digest cache for single bundles (900 s, 256 entries; ignored for batches)",
        ),
      },
    },
    response: {
      200: {
        description: "a verdict payload plus `service`, or for a batch `{results, count, service}`",
        type: "object",
        anyOf: [verdictPayloadSchema, verdictBatchSchema],
      },
      400: refusalsSchema(config.limits.maxResultBytes),
      ...commonErrorResponses,
    },
  }),
});
